import './support/errors.js';
import './seats/alias.js';
import './seats/holding.js';
import './machines/machine.js';
import './seats/seat.js';
import './calls/call.js';
import './hand-acts/hand-act.js';
import './plans/plan.js';
import './consumers/consumer-reset.js';
import './status/status.js';
import './status/status-delta.js';
import './status/status-history.js';
import './durations/duration.js';
import './support/ticks.js';
import { builder } from './support/builder.js';

export const schema = builder.toSchema({ sortSchema: true });

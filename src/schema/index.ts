import './errors.js';
import './alias.js';
import './holding.js';
import './machine.js';
import './seat.js';
import '../resolvers/health.js';
import '../resolvers/machines.js';
import '../resolvers/seats.js';
import { builder } from './builder.js';

export const schema = builder.toSchema({ sortSchema: true });

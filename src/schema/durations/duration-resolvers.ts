import { readDurations } from '../../services/durations/durations.js';
import { builder } from '../support/builder.js';
import { DurationKindEnum, DurationSummaryRef } from './duration.js';

builder.queryFields((t) => ({
  durations: t.field({
    type: [DurationSummaryRef],
    description: 'Durations recorded as heard, summarised per kind (or one kind) since an instant (default: all kept).',
    args: { kind: t.arg({ type: DurationKindEnum }), since: t.arg({ type: 'DateTime' }) },
    resolve: (_root, { kind, since }, ctx) => readDurations(ctx.mesh, { kind, since }),
  }),
}));

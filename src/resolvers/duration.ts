import { builder } from '../schema/builder.js';
import { DurationKindEnum, DurationSummaryRef } from '../schema/duration.js';
import { readDurations } from '../services/durations/durations.js';

builder.queryFields((t) => ({
  durations: t.field({
    type: [DurationSummaryRef],
    description: 'Durations recorded as heard, summarised per kind (or one kind) since an instant (default: all kept).',
    args: { kind: t.arg({ type: DurationKindEnum }), since: t.arg({ type: 'DateTime' }) },
    resolve: (_root, { kind, since }, ctx) => readDurations(ctx.mesh, { kind, since }),
  }),
}));

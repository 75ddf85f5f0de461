import { type DurationKind, type DurationSummary, readDurations } from '../../services/durations/durations.js';
import { builder } from '../support/builder.js';

const DurationKindEnum = builder.enumType('DurationKind', {
  description: 'What a duration times.',
  values: {
    APPLY: { value: 'apply' as DurationKind, description: "An apply sent to a machine → that machine's first report." },
    HEARTBEAT_GAP: { value: 'heartbeat_gap' as DurationKind, description: 'A late heartbeat: the gap since the one before, when over 1.5 expected intervals.' },
    PLAN_TIER: { value: 'plan_tier' as DurationKind, description: "A plan's tier: started → every machine reported ok." },
    BUILD: { value: 'build' as DurationKind, description: 'A build: started → finished or failed.' },
  } as const,
});

const DurationSummaryRef = builder.objectRef<DurationSummary>('DurationSummary').implement({
  description: 'The observations of one kind over a window, in seconds, beside the bound in force for that kind.',
  fields: (t) => ({
    kind: t.field({ type: DurationKindEnum, resolve: (s) => s.kind }),
    count: t.exposeInt('count'),
    min: t.exposeFloat('min', { nullable: true, description: 'Null when the window holds none.' }),
    mean: t.exposeFloat('mean', { nullable: true }),
    p50: t.exposeFloat('p50', { nullable: true }),
    p90: t.exposeFloat('p90', { nullable: true }),
    p99: t.exposeFloat('p99', { nullable: true }),
    max: t.exposeFloat('max', { nullable: true }),
    bound: t.exposeFloat('bound', {
      description:
        'The bound in force: the apply, tier or build time-out as configured; for heartbeat gaps, the lateness (1.5 × MESH_HEARTBEAT_S), which every gap recorded exceeds.',
    }),
    exceeded: t.exposeInt('exceeded', { description: 'How many observations exceeded the bound.' }),
  }),
});

builder.queryFields((t) => ({
  durations: t.field({
    type: [DurationSummaryRef],
    description: 'Durations recorded as heard, summarised per kind (or one kind) since an instant (default: all kept).',
    args: { kind: t.arg({ type: DurationKindEnum }), since: t.arg({ type: 'DateTime' }) },
    resolve: (_root, { kind, since }, ctx) => readDurations(ctx.mesh, { kind, since }),
  }),
}));

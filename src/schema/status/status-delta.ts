import type { ObjectRef } from '@pothos/core';
import { deltaChange, fullChange, type ListChanges, type StatusChange, type StatusDelta } from '../../services/status/delta/delta.js';
import { followLive, judgeEveryMs, liveSeq } from '../../services/status/live/subscription.js';
import { builder, type SchemaTypes } from '../support/builder.js';
import { mapLive, markSeq, resumeSeq } from '../support/live.js';
import { MachineStatusRef, PlanStatusRef, RepeatedCauseStatusRef, SeatStatusRef, StatusRef } from './status.js';

const PLACEMENT =
  'Apply in this order: drop `removed`, replace each of `changed` where its key stands, then insert each of `added` at its `addedAt` index (ascending); when `order` is set, it is the whole new order of keys instead.';

function listChangesRef<T>(name: string, item: ObjectRef<PothosSchemaTypes.ExtendDefaultTypes<SchemaTypes>, T>, key: string) {
  return builder.objectRef<ListChanges<T>>(name).implement({
    description: `What changed in one list of the status, items keyed by ${key}. ${PLACEMENT}`,
    fields: (t) => ({
      added: t.field({ type: [item], description: 'Items new to the list, in list order.', resolve: (c) => c.added }),
      addedAt: t.exposeIntList('addedAt', { description: 'The index of each added item in the new list.' }),
      changed: t.field({ type: [item], description: 'Items kept whose value changed: the whole new value.', resolve: (c) => c.changed }),
      removed: t.exposeStringList('removed', { description: `The ${key} of each item no longer in the list.` }),
      order: t.exposeStringList('order', {
        nullable: true,
        description: 'Set only when kept items changed their relative order: every key, in the new order.',
      }),
    }),
  });
}

const MachineStatusChangesRef = listChangesRef('MachineStatusChanges', MachineStatusRef, 'name');
const SeatStatusChangesRef = listChangesRef('SeatStatusChanges', SeatStatusRef, 'name');
const PlanStatusChangesRef = listChangesRef('PlanStatusChanges', PlanStatusRef, 'id');
const RepeatedCauseChangesRef = listChangesRef('RepeatedCauseChanges', RepeatedCauseStatusRef, 'cause');

const NameChangesRef = builder.objectRef<ListChanges<string>>('NameChanges').implement({
  description: `What changed in a list of names. ${PLACEMENT}`,
  fields: (t) => ({
    added: t.exposeStringList('added'),
    addedAt: t.exposeIntList('addedAt'),
    removed: t.exposeStringList('removed'),
    order: t.exposeStringList('order', { nullable: true }),
  }),
});

const StatusDeltaRef = builder.objectRef<StatusDelta>('StatusDelta').implement({
  description: 'What changed from the composition `baseSeq` to the composition `seq`; apply it only to `baseSeq`. See docs/status-deltas.md.',
  fields: (t) => ({
    seq: t.exposeInt('seq', { description: 'The composition this delta brings its holder to.' }),
    baseSeq: t.exposeInt('baseSeq', { description: 'The composition this delta applies to.' }),
    composedAt: t.field({ type: 'DateTime', resolve: (d) => d.composedAt }),
    heardUntil: t.field({
      type: 'DateTime',
      description: '`Status.heardUntil` of the composition `seq`.',
      resolve: (d) => d.heardUntil ?? d.composedAt,
    }),
    tookMs: t.exposeFloat('tookMs'),
    trigger: t.exposeString('trigger'),
    machines: t.field({ type: MachineStatusChangesRef, resolve: (d) => d.machines }),
    seats: t.field({ type: SeatStatusChangesRef, resolve: (d) => d.seats }),
    plans: t.field({ type: PlanStatusChangesRef, resolve: (d) => d.plans }),
    repeatedCauses: t.field({ type: RepeatedCauseChangesRef, resolve: (d) => d.repeatedCauses }),
    unheldSeats: t.field({ type: NameChangesRef, resolve: (d) => d.unheldSeats }),
    callsRunning: t.exposeInt('callsRunning', { nullable: true, description: 'The new count; null when unchanged.' }),
    handActsThisWeek: t.exposeInt('handActsThisWeek', { nullable: true, description: 'The new count; null when unchanged.' }),
  }),
});

const StatusChangeRef = builder.objectRef<StatusChange>('StatusChange').implement({
  description:
    'One message of `statusChanges`: the whole composition (`full`, with `baseSeq` null) first and whenever this subscriber could not apply a delta, else only what changed (`delta`).',
  fields: (t) => ({
    seq: t.exposeInt('seq', { description: 'The composition the subscriber holds once this message is applied.' }),
    baseSeq: t.exposeInt('baseSeq', { nullable: true, description: 'The composition `delta` applies to; null on a full one.' }),
    full: t.field({ type: StatusRef, nullable: true, resolve: (c) => c.full }),
    delta: t.field({ type: StatusDeltaRef, nullable: true, resolve: (c) => c.delta }),
  }),
});

// Over graphql-ws the fanout serves this field (one execution per composition for all alike
// subscribers); this subscribe is the path of SSE and of any socket the fanout does not serve.
builder.subscriptionFields((t) => ({
  statusChanges: t.field({
    type: StatusChangeRef,
    description:
      'The current composition whole, then for each new one only what changed since the last one sent to this subscriber (see docs/status-deltas.md). A subscriber that fell behind skips to the latest. `after: N` (or SSE `Last-Event-ID: N`) resumes: the deltas after composition N (merged into one message), then live ones; a whole composition first when N is no longer kept. `everyMs`: at most one message per interval, the latest, with the changes of those skipped merged in.',
    args: {
      after: t.arg.int({ description: 'The seq of the composition this subscriber holds (the `seq` of the last message it applied).' }),
      everyMs: t.arg.int({ description: 'At most one message per this many milliseconds (0 to 3,600,000); absent: every composition.' }),
    },
    subscribe: (_root, args, ctx) => {
      const everyMs = judgeEveryMs(args.everyMs);
      const steps = followLive(ctx.mesh.status, { everyMs, changes: true, after: resumeSeq(ctx, args.after) });
      return mapLive(steps, (step): StatusChange => {
        markSeq(ctx, liveSeq(step));
        return step.delta ? deltaChange(step.delta) : fullChange(step.composition!);
      });
    },
    resolve: (change) => change as StatusChange,
  }),
}));

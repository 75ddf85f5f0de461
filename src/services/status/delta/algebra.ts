import { Invalid } from '../../../kernel/errors.js';
import { applyListChanges, diffList, type ListChanges, type ListChangesIn } from './lists.js';

// The delta algebra, pure: no I/O, no Node, no NATS, and nothing of the gateway but its typed
// errors. The gateway (delta.ts specialises it to its `Composition`), meshctl and the dashboard
// apply deltas with these same functions, so a delta one refuses, all refuse.

/**
 * What the algebra needs of a composition: its stamp, two counts and five keyed lists. The
 * gateway's `Composition` (src/services/status/composition.ts) is one; so is the `Status` a client
 * selects over GraphQL, whose instants are DateTime scalars and whose items carry only the fields
 * selected. The functions are generic in it, so each consumer gets back its own shape.
 */
export interface Composed {
  seq: number;
  composedAt: unknown;
  heardUntil?: unknown;
  tookMs: number;
  trigger: string;
  machines: readonly { name: string }[];
  seats: readonly { name: string }[];
  plans: readonly { id: string }[];
  repeatedCauses: readonly { cause: string }[];
  unheldSeats: readonly string[];
  callsRunning: number;
  handActsThisWeek: number;
}

/**
 * What changed from the composition `baseSeq` to the composition `seq`. A list is keyed by machine
 * name, seat name, plan id, repeated cause, unheld seat name; a count is null when it did not
 * change. composedAt, heardUntil, tookMs and trigger describe the composition `seq` and are always
 * present (heardUntil but from an older gateway).
 */
export interface Delta<C extends Composed> {
  seq: number;
  baseSeq: number;
  composedAt: C['composedAt'];
  heardUntil?: C['heardUntil'];
  tookMs: number;
  trigger: string;
  machines: ListChanges<C['machines'][number]>;
  seats: ListChanges<C['seats'][number]>;
  plans: ListChanges<C['plans'][number]>;
  repeatedCauses: ListChanges<C['repeatedCauses'][number]>;
  unheldSeats: ListChanges<string>;
  callsRunning: number | null;
  handActsThisWeek: number | null;
}

/** A delta as a client receives it (lists as `ListChangesIn`); every `Delta` is one. */
export interface DeltaIn<C extends Composed> {
  readonly seq: number;
  readonly baseSeq: number;
  readonly composedAt: C['composedAt'];
  readonly heardUntil?: C['heardUntil'];
  readonly tookMs: number;
  readonly trigger: string;
  readonly machines: ListChangesIn<C['machines'][number]>;
  readonly seats: ListChangesIn<C['seats'][number]>;
  readonly plans: ListChangesIn<C['plans'][number]>;
  readonly repeatedCauses: ListChangesIn<C['repeatedCauses'][number]>;
  readonly unheldSeats: ListChangesIn<string>;
  readonly callsRunning: number | null;
  readonly handActsThisWeek: number | null;
}

/** The keyed lists of a composition. */
export type KeyedList = 'machines' | 'seats' | 'plans' | 'repeatedCauses' | 'unheldSeats';

/**
 * What keys each list's items: machines and seats by name, plans by id, causes by cause, unheld
 * seats by themselves. The one place this pairing is written: every function over the lists
 * (diff, apply, merge, replay) goes through `eachList`. (kernel/names.ts' `byName` is a comparator.)
 */
const LIST_KEYS: { readonly [L in KeyedList]: (item: never) => string } = {
  machines: (machine: { name: string }) => machine.name,
  seats: (seat: { name: string }) => seat.name,
  plans: (plan: { id: string }) => plan.id,
  repeatedCauses: (cause: { cause: string }) => cause.cause,
  unheldSeats: (seat: string) => seat,
};
const KEYED_LISTS = Object.keys(LIST_KEYS) as KeyedList[];

/**
 * `{ machines: each('machines', its key), seats: …, … }`, one call per keyed list; `R` is the
 * shape built (a delta's lists, a composition's). Inside `each` the items are unknown: the caller
 * hands them to a function generic in its items (`diffList`, `applyListChanges`, …).
 */
export function eachList<R extends { [L in KeyedList]: unknown }>(each: (list: KeyedList, key: (item: unknown) => string) => unknown): R {
  const lists = {} as { [L in KeyedList]: unknown };
  for (const list of KEYED_LISTS) lists[list] = each(list, LIST_KEYS[list] as (item: unknown) => string);
  return lists as R;
}

const isEmpty = (changes: ListChangesIn<unknown>) =>
  !changes.added.length && !changes.addedAt.length && !changes.changed?.length && !changes.removed.length && !changes.order;

/** What changed from composition `a` to composition `b`; pure, and cheap where items are shared by reference. */
export function diffCompositions<C extends Composed>(a: C, b: C): Delta<C> {
  return {
    seq: b.seq,
    baseSeq: a.seq,
    composedAt: b.composedAt,
    ...(b.heardUntil !== undefined && { heardUntil: b.heardUntil }),
    tookMs: b.tookMs,
    trigger: b.trigger,
    ...eachList<Pick<Delta<C>, KeyedList>>((list, key) => diffList<unknown>(a[list], b[list], key)),
    callsRunning: a.callsRunning === b.callsRunning ? null : b.callsRunning,
    handActsThisWeek: a.handActsThisWeek === b.handActsThisWeek ? null : b.handActsThisWeek,
  };
}

/** Whether a delta changes nothing but the composition's stamp (seq, composedAt, heardUntil, tookMs, trigger). */
export function deltaIsEmpty(delta: DeltaIn<Composed>): boolean {
  return KEYED_LISTS.every((list) => isEmpty(delta[list])) && delta.callsRunning === null && delta.handActsThisWeek === null;
}

/**
 * The composition `delta.seq`, from the composition `delta.baseSeq` it applies to: `a` with the
 * delta's stamp, counts and lists (any other field of `a`, the gateway's `controller`, is kept).
 * A list the delta leaves as it was is kept, the same object: most compositions of a steady mesh
 * change no machine, and a copy of 100,000 of them per delta was 7–10% of a following replica
 * (docs/BENCHMARKS.md); what is counted of a list is then counted once (`countStates`).
 * Throws Invalid when `a` is not that base, or when a list's changes do not fit it (an `order` key
 * neither kept nor added): the holder then needs a whole composition again, never a wrong one.
 */
export function applyDelta<C extends Composed>(a: C, delta: NoInfer<DeltaIn<C>>): C {
  if (a.seq !== delta.baseSeq) throw new Invalid(`the delta applies to composition ${delta.baseSeq}, not ${a.seq}`);
  return withStamp(a, delta, {
    ...eachList<Pick<C, KeyedList>>((list, key) => (isEmpty(delta[list]) ? a[list] : applyListChanges<unknown>(a[list], delta[list], key))),
    callsRunning: delta.callsRunning ?? a.callsRunning,
    handActsThisWeek: delta.handActsThisWeek ?? a.handActsThisWeek,
  });
}

/**
 * `applyDelta`, or undefined when it refuses the delta (an Invalid): what a client holding `a`
 * does then is the same everywhere — forget `a` and ask for a whole composition — so meshctl and
 * the dashboard share this rather than each catching.
 */
export function tryApplyDelta<C extends Composed>(a: C | undefined, delta: NoInfer<DeltaIn<C>>): C | undefined {
  if (a === undefined) return undefined;
  try {
    return applyDelta(a, delta);
  } catch (error) {
    if (error instanceof Invalid) return undefined;
    throw error;
  }
}

/**
 * `a` stamped as the composition `last` brings it to (seq, composedAt, heardUntil when `last` has
 * one, tookMs, trigger), with the lists and counts given.
 */
export function withStamp<C extends Composed>(
  a: C,
  last: Pick<DeltaIn<C>, 'seq' | 'composedAt' | 'heardUntil' | 'tookMs' | 'trigger'>,
  body: Pick<C, 'machines' | 'seats' | 'unheldSeats' | 'callsRunning' | 'handActsThisWeek' | 'repeatedCauses' | 'plans'>,
): C {
  const next: C = {
    ...a,
    seq: last.seq,
    composedAt: last.composedAt,
    heardUntil: last.heardUntil,
    tookMs: last.tookMs,
    trigger: last.trigger,
    ...body,
  };
  // A delta of an older gateway has no heardUntil, and neither has the composition it brings.
  if (last.heardUntil === undefined) delete (next as Composed).heardUntil;
  return next;
}

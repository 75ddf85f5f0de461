import { Invalid } from '../../kernel/errors.js';
import type { Composition, MachineStatus, PlanStatus, RepeatedCauseStatus, SeatStatus } from './composition.js';

/**
 * The changes to one keyed list of a composition, from a base to the next. Applied to the base's
 * list it gives the next one exactly, items and order (see `applyListChanges`).
 */
export interface ListChanges<T> {
  /** Items whose key the base did not have, in the order of the new list. */
  added: T[];
  /** Where each added item stands in the new list: ascending, one per `added`. */
  addedAt: number[];
  /** Items the base had under the same key with another value: the whole new value. */
  changed: T[];
  /** Keys the base had and the new list does not. */
  removed: string[];
  /** Every key of the new list in order; set only when items kept from the base changed their relative order. */
  order: string[] | null;
}

/**
 * What changed from the composition `baseSeq` to the composition `seq`. A list is keyed by machine
 * name, seat name, plan id, repeated cause, unheld seat name; a count is null when it did not
 * change. composedAt, tookMs and trigger describe the composition `seq` and are always present.
 */
export interface StatusDelta {
  seq: number;
  baseSeq: number;
  composedAt: string;
  tookMs: number;
  trigger: string;
  machines: ListChanges<MachineStatus>;
  seats: ListChanges<SeatStatus>;
  plans: ListChanges<PlanStatus>;
  repeatedCauses: ListChanges<RepeatedCauseStatus>;
  unheldSeats: ListChanges<string>;
  callsRunning: number | null;
  handActsThisWeek: number | null;
}

/**
 * One message of a change stream: the whole composition (the first, and after any gap), or a delta
 * bringing a holder of `baseSeq` to `seq`.
 */
export interface StatusChange {
  seq: number;
  baseSeq: number | null;
  full: Composition | null;
  delta: StatusDelta | null;
}

export const fullChange = (composition: Composition): StatusChange => ({ seq: composition.seq, baseSeq: null, full: composition, delta: null });
export const deltaChange = (delta: StatusDelta): StatusChange => ({ seq: delta.seq, baseSeq: delta.baseSeq, full: null, delta });

const byName = (item: { name: string }) => item.name;
const byId = (item: { id: string }) => item.id;
const byCause = (item: { cause: string }) => item.cause;
const itself = (item: string) => item;

/** Whether two JSON values (plain objects, arrays, strings, numbers, booleans, null) are equal by value. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) {
    if (!Object.hasOwn(b, k)) return false;
    if (!sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}

/** The changes turning list `a` into list `b`, items matched by `key` (keys are unique in a list). */
export function diffList<T>(a: readonly T[], b: readonly T[], key: (item: T) => string): ListChanges<T> {
  const before = new Map<string, T>();
  for (const item of a) before.set(key(item), item);
  const changes: ListChanges<T> = { added: [], addedAt: [], changed: [], removed: [], order: null };
  const after = new Set<string>();
  const keptInNewOrder: string[] = [];
  for (let i = 0; i < b.length; i++) {
    const item = b[i];
    const k = key(item);
    after.add(k);
    if (!before.has(k)) {
      changes.added.push(item);
      changes.addedAt.push(i);
      continue;
    }
    keptInNewOrder.push(k);
    if (!sameJson(before.get(k), item)) changes.changed.push(item);
  }
  let kept = 0;
  let reordered = false;
  for (const item of a) {
    const k = key(item);
    if (!after.has(k)) changes.removed.push(k);
    else if (keptInNewOrder[kept++] !== k) reordered = true;
  }
  if (reordered) changes.order = b.map(key);
  return changes;
}

/**
 * List `a` with `changes` applied: removals, then changed values in place, then additions at their
 * places (or `order`). `changed` may be absent, as it is from a list of names on the wire.
 */
export function applyListChanges<T>(a: readonly T[], changes: Omit<ListChanges<T>, 'changed'> & { changed?: T[] }, key: (item: T) => string): T[] {
  const removed = new Set(changes.removed);
  const changed = new Map<string, T>();
  for (const item of changes.changed ?? []) changed.set(key(item), item);
  const list: T[] = [];
  for (const item of a) {
    const k = key(item);
    if (!removed.has(k)) list.push(changed.get(k) ?? item);
  }
  if (changes.added.length !== changes.addedAt.length) throw new Invalid('a delta list has as many places as added items');
  if (changes.order) {
    const byKey = new Map<string, T>();
    for (const item of list) byKey.set(key(item), item);
    for (const item of changes.added) byKey.set(key(item), item);
    return changes.order.map((k) => {
      const item = byKey.get(k);
      if (item === undefined) throw new Invalid(`a delta orders ${JSON.stringify(k)}, which it neither keeps nor adds`);
      return item;
    });
  }
  for (let i = 0; i < changes.added.length; i++) list.splice(changes.addedAt[i], 0, changes.added[i]);
  return list;
}

const isEmpty = (changes: ListChanges<unknown>) => !changes.added.length && !changes.changed.length && !changes.removed.length && !changes.order;

/** What changed from composition `a` to composition `b`; pure, and cheap where items are shared by reference. */
export function diffCompositions(a: Composition, b: Composition): StatusDelta {
  return {
    seq: b.seq,
    baseSeq: a.seq,
    composedAt: b.composedAt,
    tookMs: b.tookMs,
    trigger: b.trigger,
    machines: diffList(a.machines, b.machines, byName),
    seats: diffList(a.seats, b.seats, byName),
    plans: diffList(a.plans, b.plans, byId),
    repeatedCauses: diffList(a.repeatedCauses, b.repeatedCauses, byCause),
    unheldSeats: diffList(a.unheldSeats, b.unheldSeats, itself),
    callsRunning: a.callsRunning === b.callsRunning ? null : b.callsRunning,
    handActsThisWeek: a.handActsThisWeek === b.handActsThisWeek ? null : b.handActsThisWeek,
  };
}

/** Whether a delta changes nothing but the composition's stamp (seq, composedAt, tookMs, trigger). */
export function deltaIsEmpty(delta: StatusDelta): boolean {
  return (
    isEmpty(delta.machines) &&
    isEmpty(delta.seats) &&
    isEmpty(delta.plans) &&
    isEmpty(delta.repeatedCauses) &&
    isEmpty(delta.unheldSeats) &&
    delta.callsRunning === null &&
    delta.handActsThisWeek === null
  );
}

/**
 * The composition `delta.seq`, from the composition `delta.baseSeq` it applies to. Throws Invalid
 * when `a` is not that base: a client then needs a whole composition again.
 */
export function applyDelta(a: Composition, delta: StatusDelta): Composition {
  if (a.seq !== delta.baseSeq) throw new Invalid(`the delta applies to composition ${delta.baseSeq}, not ${a.seq}`);
  return {
    seq: delta.seq,
    ...(a.controller !== undefined && { controller: a.controller }),
    composedAt: delta.composedAt,
    tookMs: delta.tookMs,
    trigger: delta.trigger,
    machines: applyListChanges(a.machines, delta.machines, byName),
    seats: applyListChanges(a.seats, delta.seats, byName),
    unheldSeats: applyListChanges(a.unheldSeats, delta.unheldSeats, itself),
    callsRunning: delta.callsRunning ?? a.callsRunning,
    handActsThisWeek: delta.handActsThisWeek ?? a.handActsThisWeek,
    repeatedCauses: applyListChanges(a.repeatedCauses, delta.repeatedCauses, byCause),
    plans: applyListChanges(a.plans, delta.plans, byId),
  };
}

/** The changes to one list over a chain of deltas, ending at the list `target` (the newest composition's). */
function mergeLists<T>(chain: ListChanges<T>[], target: readonly T[], key: (item: T) => string): ListChanges<T> {
  // What each key is relative to the first base: added since, removed since, or kept and changed.
  const state = new Map<string, 'added' | 'removed' | 'changed'>();
  let reordered = false;
  for (const changes of chain) {
    for (const k of changes.removed) {
      if (state.get(k) === 'added') state.delete(k);
      else state.set(k, 'removed');
    }
    for (const item of changes.added) {
      const k = key(item);
      state.set(k, state.get(k) === 'removed' ? 'changed' : state.get(k) === 'changed' ? 'changed' : 'added');
    }
    for (const item of changes.changed) {
      const k = key(item);
      if (!state.has(k)) state.set(k, 'changed');
    }
    if (changes.order) reordered = true;
  }
  const merged: ListChanges<T> = { added: [], addedAt: [], changed: [], removed: [], order: reordered ? target.map(key) : null };
  for (let i = 0; i < target.length; i++) {
    const s = state.get(key(target[i]));
    if (s === 'added') {
      merged.added.push(target[i]);
      merged.addedAt.push(i);
    } else if (s === 'changed') merged.changed.push(target[i]);
  }
  for (const [k, s] of state) if (s === 'removed') merged.removed.push(k);
  return merged;
}

/**
 * One delta bringing a holder of `chain[0].baseSeq` to `target` (the composition `chain`'s last
 * delta brings to): the chain's changes merged, items taken from `target`. A resumed subscriber
 * is sent this one message instead of the chain. The chain must be consecutive.
 */
export function mergeDeltas(chain: readonly StatusDelta[], target: Composition): StatusDelta {
  const last = chain[chain.length - 1];
  if (!last || last.seq !== target.seq) throw new Invalid('a chain of deltas merges into the composition it ends at');
  for (let i = 1; i < chain.length; i++) if (chain[i].baseSeq !== chain[i - 1].seq) throw new Invalid('a chain of deltas to merge is consecutive');
  const lastCount = (pick: (d: StatusDelta) => number | null) => chain.reduce<number | null>((n, d) => pick(d) ?? n, null);
  return {
    seq: target.seq,
    baseSeq: chain[0].baseSeq,
    composedAt: last.composedAt,
    tookMs: last.tookMs,
    trigger: last.trigger,
    machines: mergeLists(
      chain.map((d) => d.machines),
      target.machines,
      byName,
    ),
    seats: mergeLists(
      chain.map((d) => d.seats),
      target.seats,
      byName,
    ),
    plans: mergeLists(
      chain.map((d) => d.plans),
      target.plans,
      byId,
    ),
    repeatedCauses: mergeLists(
      chain.map((d) => d.repeatedCauses),
      target.repeatedCauses,
      byCause,
    ),
    unheldSeats: mergeLists(
      chain.map((d) => ({ ...d.unheldSeats, changed: d.unheldSeats.changed ?? [] })),
      target.unheldSeats,
      itself,
    ),
    callsRunning: lastCount((d) => d.callsRunning),
    handActsThisWeek: lastCount((d) => d.handActsThisWeek),
  };
}

/** A list after a chain of its changes: items replaced in place while a change only changes items (the common case), rebuilt otherwise. */
function replayList<T>(list: readonly T[], chain: ListChanges<T>[], key: (item: T) => string): T[] {
  let items = list.slice();
  let index: Map<string, number> | undefined;
  for (const changes of chain) {
    if (changes.removed.length || changes.added.length || changes.order) {
      items = applyListChanges(items, changes, key);
      index = undefined;
      continue;
    }
    if (!changes.changed.length) continue;
    index ??= new Map(items.map((item, i) => [key(item), i]));
    for (const item of changes.changed) {
      const at = index.get(key(item));
      if (at !== undefined) items[at] = item;
    }
  }
  return items;
}

/**
 * The composition a chain of consecutive deltas brings `base` to: what `applyDelta` one after the
 * other gives, without a copy of every list per delta (a minute of deltas over 10,000 machines
 * replays in milliseconds, not a second). Throws Invalid when the chain does not start at `base`.
 */
export function replayDeltas(base: Composition, chain: readonly StatusDelta[]): Composition {
  if (!chain.length) return base;
  let seq = base.seq;
  for (const d of chain) {
    if (d.baseSeq !== seq) throw new Invalid(`the delta applies to composition ${d.baseSeq}, not ${seq}`);
    seq = d.seq;
  }
  const last = chain[chain.length - 1];
  const count = (pick: (d: StatusDelta) => number | null, from: number) => chain.reduce((n, d) => pick(d) ?? n, from);
  return {
    seq: last.seq,
    ...(base.controller !== undefined && { controller: base.controller }),
    composedAt: last.composedAt,
    tookMs: last.tookMs,
    trigger: last.trigger,
    machines: replayList(
      base.machines,
      chain.map((d) => d.machines),
      byName,
    ),
    seats: replayList(
      base.seats,
      chain.map((d) => d.seats),
      byName,
    ),
    unheldSeats: replayList(
      base.unheldSeats,
      chain.map((d) => ({ ...d.unheldSeats, changed: d.unheldSeats.changed ?? [] })),
      itself,
    ),
    callsRunning: count((d) => d.callsRunning, base.callsRunning),
    handActsThisWeek: count((d) => d.handActsThisWeek, base.handActsThisWeek),
    repeatedCauses: replayList(
      base.repeatedCauses,
      chain.map((d) => d.repeatedCauses),
      byCause,
    ),
    plans: replayList(
      base.plans,
      chain.map((d) => d.plans),
      byId,
    ),
  };
}

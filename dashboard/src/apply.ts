import type { ListChanges, Status, StatusDelta } from './types.js';

/** Applies one list's changes (docs/status-deltas.md): drop removed, replace changed in place, then order or insert added. */
function applyList<T>(list: T[], changes: ListChanges<T>, key: (item: T) => string): T[] {
  const removed = new Set(changes.removed);
  const changed = new Map((changes.changed ?? []).map((item) => [key(item), item]));
  const next = list.filter((item) => !removed.has(key(item))).map((item) => changed.get(key(item)) ?? item);
  if (changes.order) {
    const byKey = new Map([...next, ...changes.added].map((item) => [key(item), item]));
    return changes.order.map((k) => byKey.get(k)).filter((item): item is T => item !== undefined);
  }
  changes.added.forEach((item, i) => {
    next.splice(changes.addedAt[i] ?? next.length, 0, item);
  });
  return next;
}

/** The composition after `delta`, which must apply to `held` (its baseSeq is held's seq). */
export function applyDelta(held: Status, delta: StatusDelta): Status {
  return {
    ...held,
    seq: delta.seq,
    composedAt: delta.composedAt,
    heardUntil: delta.heardUntil,
    tookMs: delta.tookMs,
    trigger: delta.trigger,
    machines: applyList(held.machines, delta.machines, (m) => m.name),
    seats: applyList(held.seats, delta.seats, (s) => s.name),
    plans: applyList(held.plans, delta.plans, (p) => p.id),
    repeatedCauses: applyList(held.repeatedCauses, delta.repeatedCauses, (r) => r.cause),
    unheldSeats: applyList(held.unheldSeats, delta.unheldSeats, (n) => n),
    callsRunning: delta.callsRunning ?? held.callsRunning,
    handActsThisWeek: delta.handActsThisWeek ?? held.handActsThisWeek,
  };
}

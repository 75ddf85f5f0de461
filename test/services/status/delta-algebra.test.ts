import fc from 'fast-check';
import { expect, test } from 'vitest';
import { Invalid } from '../../../src/kernel/errors.js';
import type { Composition } from '../../../src/services/status/composition.js';
import { applyDelta, deltaIsEmpty, diffCompositions, tryApplyDelta } from '../../../src/services/status/delta/algebra.js';
import { mergeDeltas, replayDeltas } from '../../../src/services/status/delta/delta-chain.js';
import { applyListChanges } from '../../../src/services/status/delta/lists.js';

// The delta algebra alone, no gateway: the one pure module the gateway, meshctl and the dashboard
// apply deltas with (src/services/status/delta/algebra.ts). Keys come from small pools so that
// three random compositions share items, change some, drop some and order them anew.

const instant = fc.constantFrom('2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z', '2026-01-01T00:00:02.000Z');
const name = (prefix: string, n: number) => fc.integer({ min: 0, max: n - 1 }).map((i) => `${prefix}${i}`);
const keyed = <T>(item: fc.Arbitrary<T>, key: (t: T) => string) => fc.uniqueArray(item, { selector: key, maxLength: 8 });

const machine = fc.record({
  name: name('m', 10),
  site: fc.constantFrom(null, 'north', 'south'),
  state: fc.constantFrom('UP' as const, 'LATE' as const, 'SILENT' as const),
  lastHeardAt: instant,
  modules: fc.subarray(['web', 'db', 'cache']),
  holdings: fc.array(fc.record({ seat: name('s', 4), module: fc.constantFrom('web', 'db'), derived: fc.boolean() }), { maxLength: 2 }),
});
const seat = fc.record({
  name: name('s', 6),
  held: fc.boolean(),
  holders: fc.array(fc.record({ machine: name('m', 10), module: fc.constantFrom('web', 'db'), site: fc.constantFrom(null, 'north'), derived: fc.boolean() }), {
    maxLength: 2,
  }),
});
const plan = fc.record({
  id: name('p', 6),
  seat: name('s', 6),
  build: fc.constantFrom('b1', 'b2'),
  state: fc.constantFrom('OPEN', 'STOPPED', 'DONE'),
  tier: fc.integer({ min: 0, max: 2 }),
  tiers: fc.constant([['m0'], ['m1', 'm2']]).map((tiers) => tiers.map((t) => [...t])),
  behind: fc.constantFrom(null, 'p0'),
  openedAt: fc.option(instant),
  endedAt: fc.option(instant),
  stopReason: fc.constantFrom(null, 'a machine failed'),
});
const cause = fc.record({ cause: name('c', 5), count: fc.integer({ min: 1, max: 3 }), firstAt: instant, lastAt: instant });

/**
 * A composition numbered `seq`, its lists in any order (the algebra keeps whatever order it is
 * given); a plain JSON value, as every composition is (fast-check's records have no prototype).
 */
const composition = (seq: number): fc.Arbitrary<Composition> =>
  fc
    .record({
      composedAt: instant,
      heardUntil: fc.option(instant, { nil: undefined }),
      tookMs: fc.integer({ min: 0, max: 50 }),
      trigger: fc.constantFrom('news', 'minute', 'build b1'),
      machines: keyed(machine, (m) => m.name),
      seats: keyed(seat, (s) => s.name),
      unheldSeats: fc.uniqueArray(name('s', 6), { maxLength: 6 }),
      callsRunning: fc.integer({ min: 0, max: 3 }),
      handActsThisWeek: fc.integer({ min: 0, max: 3 }),
      repeatedCauses: keyed(cause, (c) => c.cause),
      plans: keyed(plan, (p) => p.id),
    })
    .map(
      ({ heardUntil, ...rest }): Composition =>
        JSON.parse(JSON.stringify({ seq, controller: 'one', ...rest, ...(heardUntil !== undefined && { heardUntil }) })),
    );

const three = fc.tuple(composition(1), composition(2), composition(5));

/** A delta as a client holds it: through JSON, and `unheldSeats` without `changed` (NameChanges has none). */
function overTheWire<D extends { unheldSeats: object }>(delta: D): D {
  const { changed: _none, ...names } = delta.unheldSeats as { changed?: unknown };
  return JSON.parse(JSON.stringify({ ...delta, unheldSeats: names }));
}

test('a delta from a to b, applied to a, gives b exactly, also as a client receives it', () => {
  fc.assert(
    fc.property(three, ([a, b]) => {
      const delta = diffCompositions(a, b);
      expect(applyDelta(a, delta)).toStrictEqual(b);
      expect(applyDelta(structuredClone(a), overTheWire(delta))).toStrictEqual(b);
      expect(deltaIsEmpty(diffCompositions(a, { ...a, seq: 2 }))).toBe(true);
    }),
  );
});

test('the deltas a→b and b→c, merged or replayed, bring a to c', () => {
  fc.assert(
    fc.property(three, ([a, b, c]) => {
      const chain = [diffCompositions(a, b), diffCompositions(b, c)];
      const merged = mergeDeltas(chain, c);
      expect(merged).toMatchObject({ baseSeq: 1, seq: 5 });
      expect(applyDelta(a, merged)).toStrictEqual(c);
      expect(applyDelta(a, overTheWire(merged))).toStrictEqual(c);
      expect(replayDeltas(a, chain)).toStrictEqual(c);
      expect(replayDeltas(a, chain.map(overTheWire))).toStrictEqual(c);
    }),
  );
});

test('a delta whose base is not the composition held is refused, as is a chain that does not start there', () => {
  fc.assert(
    fc.property(three, ([a, b, c]) => {
      const delta = diffCompositions(a, b);
      expect(() => applyDelta(b, delta)).toThrow(Invalid);
      // What meshctl and the dashboard call: nothing, so they ask for a whole composition.
      expect(tryApplyDelta(b, delta)).toBeUndefined();
      expect(tryApplyDelta(undefined, delta)).toBeUndefined();
      expect(tryApplyDelta(a, overTheWire(delta))).toStrictEqual(b);
      expect(() => applyDelta(c, overTheWire(delta))).toThrow(Invalid);
      expect(() => replayDeltas(b, [delta])).toThrow(Invalid);
      expect(() => mergeDeltas([diffCompositions(b, c), delta], b)).toThrow(Invalid);
    }),
  );
});

test('a delta ordering a key it neither keeps nor adds is refused, in every list', () => {
  fc.assert(
    fc.property(three, fc.constantFrom('machines', 'seats', 'plans', 'repeatedCauses', 'unheldSeats'), ([a, b], list) => {
      const delta = overTheWire(diffCompositions(a, b));
      const keys = (delta[list].order ?? []).concat('not-in-either');
      const bad = { ...delta, [list]: { ...delta[list], order: keys } };
      expect(() => applyDelta(a, bad)).toThrow(Invalid);
      expect(tryApplyDelta(a, bad)).toBeUndefined();
      expect(() => applyDelta(a, { ...delta, [list]: { ...delta[list], addedAt: [...delta[list].addedAt, 0] } })).toThrow(Invalid);
    }),
  );
});

test('a list whose untouched items are the same objects (as incremental composing keeps them) diffs to exactly its changes, with no order unless kept items moved', () => {
  // Each edit of `a`: keep the very object, a copy of equal value, a changed copy, drop it; new items come in between; two kept ones may swap.
  const edits = fc.array(fc.constantFrom('same', 'copy', 'change', 'drop', 'insert-after'), { minLength: 0, maxLength: 40 });
  fc.assert(
    fc.property(edits, fc.boolean(), (plan, swap) => {
      const a = plan.map((_, i) => ({ name: `m${String(i).padStart(3, '0')}`, state: 'UP' }));
      const b: { name: string; state: string }[] = [];
      const changed: string[] = [];
      const removed: string[] = [];
      const added: string[] = [];
      plan.forEach((edit, i) => {
        const item = a[i]!;
        if (edit === 'same' || edit === 'insert-after') b.push(item);
        else if (edit === 'copy') b.push({ ...item });
        else if (edit === 'change') {
          b.push({ ...item, state: 'LATE' });
          changed.push(item.name);
        } else removed.push(item.name);
        if (edit === 'insert-after') {
          b.push({ name: `${item.name}-new`, state: 'UP' });
          added.push(`${item.name}-new`);
        }
      });
      const kept = b.filter((x) => !added.includes(x.name));
      const moved = swap && kept.length >= 2;
      if (moved) {
        const first = b.indexOf(kept[0]!);
        const last = b.indexOf(kept[kept.length - 1]!);
        [b[first], b[last]] = [b[last]!, b[first]!];
      }
      const delta = diffCompositions({ ...emptyComposition(1), machines: a }, { ...emptyComposition(2), machines: b });
      expect(applyDelta({ ...emptyComposition(1), machines: a }, delta).machines).toEqual(b);
      expect(delta.machines.changed.map((m) => m.name).sort()).toEqual(changed.sort());
      expect(delta.machines.removed).toEqual(removed);
      expect(delta.machines.added.map((m) => m.name)).toEqual(added);
      expect(delta.machines.addedAt).toEqual(added.map((n) => b.findIndex((m) => m.name === n)));
      expect(delta.machines.order !== null).toBe(moved);
    }),
  );
});

/** A composition with empty lists, to diff one list alone. */
function emptyComposition(seq: number) {
  return {
    seq,
    composedAt: '2026-01-01T00:00:00.000Z',
    tookMs: 0,
    trigger: 'test',
    machines: [] as { name: string; state: string }[],
    seats: [],
    unheldSeats: [],
    callsRunning: 0,
    handActsThisWeek: 0,
    repeatedCauses: [],
    plans: [],
  };
}

test('changes alone are put in place whether the list is in name order or not, and a change of a key the list lacks adds nothing', () => {
  const item = (name: string, v: number) => ({ name, v });
  const key = (i: { name: string }) => i.name;
  const changes = { added: [], addedAt: [], removed: [], order: null, changed: [item('b', 2), item('zz', 9)] };
  const sorted = [item('a', 0), item('b', 0), item('c', 0)];
  const unsorted = [item('c', 0), item('b', 0), item('a', 0)];
  expect(applyListChanges(sorted, changes, key)).toEqual([item('a', 0), item('b', 2), item('c', 0)]);
  expect(applyListChanges(unsorted, changes, key)).toEqual([item('c', 0), item('b', 2), item('a', 0)]);
  expect(applyListChanges(unsorted, { ...changes, changed: [item('a', 1)] }, key)).toEqual([item('c', 0), item('b', 0), item('a', 1)]);
  expect(sorted[1]).toEqual(item('b', 0));
});

test('a list a delta leaves as it was is kept as the same object, and one it changes is a new list', () => {
  const base = { ...emptyComposition(1), machines: [{ name: 'a', state: 'UP' }], seats: [] };
  const next = { ...base, seq: 2, seats: [] };
  const unchanged = applyDelta(base, diffCompositions(base, next));
  expect(unchanged.machines).toBe(base.machines);
  expect(unchanged.seq).toBe(2);
  const changed = applyDelta(base, diffCompositions(base, { ...next, machines: [{ name: 'a', state: 'LATE' }] }));
  expect(changed.machines).not.toBe(base.machines);
  expect(changed.machines).toEqual([{ name: 'a', state: 'LATE' }]);
  expect(base.machines).toEqual([{ name: 'a', state: 'UP' }]);
});

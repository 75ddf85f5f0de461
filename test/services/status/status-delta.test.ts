import { expect, test } from 'vitest';
import { Invalid } from '../../../src/kernel/errors.js';
import type { Composition } from '../../../src/services/status/composition.js';
import { applyDelta, applyListChanges, deltaIsEmpty, diffCompositions, diffList } from '../../../src/services/status/delta/delta.js';
import { aComposition, oneMachineChanged, randomNext, rng } from '../../fixtures/compositions.js';

test('every delta of a run applied to the first full composition reconstructs the last one exactly', () => {
  const random = rng(42);
  let composition: Composition = aComposition(1, 60);
  const run: Composition[] = [composition];
  for (let i = 0; i < 300; i++) run.push((composition = randomNext(composition, random)));

  let held = structuredClone(run[0]);
  for (let i = 1; i < run.length; i++) {
    const delta = JSON.parse(JSON.stringify(diffCompositions(run[i - 1], run[i])));
    held = applyDelta(held, delta);
    expect(held).toEqual(run[i]);
  }
  expect(JSON.stringify(held)).toBe(JSON.stringify(run.at(-1)));
});

test('a one-machine change is a delta of that machine alone', () => {
  const a = aComposition(7, 1000);
  const b = oneMachineChanged(a, 8, 500);
  const delta = diffCompositions(a, b);
  expect(delta).toMatchObject({ seq: 8, baseSeq: 7, callsRunning: null, handActsThisWeek: null });
  expect(delta.machines).toEqual({ added: [], addedAt: [], changed: [b.machines[500]], removed: [], order: null });
  expect(delta.seats.changed).toEqual([]);
  expect(deltaIsEmpty(delta)).toBe(false);
  expect(JSON.stringify(delta).length).toBeLessThan(JSON.stringify(b).length / 100);
});

test('a delta is refused on any composition but its base', () => {
  const a = aComposition(3, 5);
  const delta = diffCompositions(a, oneMachineChanged(a, 5));
  expect(() => applyDelta(aComposition(4, 5), delta)).toThrow(Invalid);
});

test('added items land where the new list has them and a reorder sends the whole order', () => {
  const key = (s: string) => s;
  const inserted = diffList(['a', 'c', 'e'], ['a', 'b', 'c', 'd', 'e', 'f'], key);
  expect(inserted).toMatchObject({ added: ['b', 'd', 'f'], addedAt: [1, 3, 5], order: null });
  expect(applyListChanges(['a', 'c', 'e'], inserted, key)).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);

  const reordered = diffList(['a', 'b', 'c'], ['c', 'x', 'a'], key);
  expect(reordered).toMatchObject({ added: ['x'], removed: ['b'], order: ['c', 'x', 'a'] });
  expect(applyListChanges(['a', 'b', 'c'], reordered, key)).toEqual(['c', 'x', 'a']);
});

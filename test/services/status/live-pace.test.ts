import { afterEach, beforeEach, expect, test, vi } from 'vitest';
import { LivePace } from '../../../src/services/status/live/subscription.js';
import { aComposition, oneMachineChanged } from '../../fixtures/compositions.js';

// The pace of one live subscription, alone: no gateway, fake timers and a fake clock.
beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

/** A pace whose `due` takes at once, as a taker that is waiting does; returns what was taken. */
function aWaitingTaker(everyMs: number) {
  const taken: number[] = [];
  const pace: LivePace = new LivePace(everyMs, true, () => {
    const message = pace.take();
    if (message) taken.push(message.composition.seq);
  });
  return { pace, taken };
}

test('at most one composition an interval goes out, the latest, and the held one goes out when the interval ends', () => {
  const { pace, taken } = aWaitingTaker(400);
  let c = aComposition(1, 5);
  pace.offer(c, undefined);
  expect(taken).toEqual([1]);
  for (let i = 0; i < 5; i++) {
    c = oneMachineChanged(c, c.seq + 1, i);
    pace.offer(c, undefined);
  }
  expect(taken).toEqual([1]);
  vi.advanceTimersByTime(400);
  expect(taken).toEqual([1, 6]);
});

test('a timer that fires before the clock says the interval ended still hands out the held composition', () => {
  const { pace, taken } = aWaitingTaker(400);
  const first = aComposition(1, 5);
  pace.offer(first, undefined);
  pace.offer(oneMachineChanged(first, 2, 0), undefined);
  // The wall clock steps back 5 ms: when the 400 ms timer fires, 5 ms of the interval are left by Date.now().
  vi.setSystemTime(Date.now() - 5);
  vi.advanceTimersByTime(400);
  vi.advanceTimersByTime(5);
  expect(taken).toEqual([1, 2]);
});

test('a taker that asks before the interval ends is told when it ends', () => {
  const taken: number[] = [];
  let waiting = false;
  const pace: LivePace = new LivePace(400, false, () => {
    if (!waiting) return;
    const message = pace.take();
    if (message) taken.push(message.composition.seq);
  });
  const first = aComposition(1, 5);
  pace.offer(first, undefined);
  expect(pace.take()?.composition.seq).toBe(1);
  pace.offer(oneMachineChanged(first, 2, 0), undefined);
  vi.advanceTimersByTime(400); // due while the taker was busy: nothing taken, still held
  expect(taken).toEqual([]);
  vi.advanceTimersByTime(100);
  waiting = true;
  expect(pace.take()?.composition.seq).toBe(2);
});

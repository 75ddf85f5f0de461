import { afterEach, beforeEach, expect, test, vi } from 'vitest';
import type { ComposeTrigger } from '../../../src/services/status/composing/poke.js';
import {
  COMPOSE_EVERY_MS,
  COMPOSE_MIN_GAP_MS,
  COMPOSE_RETRY_MS,
  type ComposeScheduler,
  composeScheduler,
} from '../../../src/services/status/composing/scheduler.js';

// The composer's scheduler, alone: no store, no NATS, fake timers and a fake clock.
beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

/** A scheduler whose compositions take `tookMs` each and answer what `outcome` says; what each was asked is kept. */
function aScheduler(options: { tookMs?: number; outcome?: () => 'done' | 'retry'; serving?: () => boolean } = {}) {
  const composed: { triggers: ComposeTrigger[]; at: number }[] = [];
  const asked: [ComposeTrigger, readonly string[] | undefined][] = [];
  const scheduler: ComposeScheduler = composeScheduler({
    serving: options.serving ?? (() => true),
    asked: (trigger, machines) => void asked.push([trigger, machines]),
    compose: async (triggers, began) => {
      began();
      composed.push({ triggers, at: Date.now() });
      await new Promise((resolve) => setTimeout(resolve, options.tookMs ?? 0));
      return options.outcome?.() ?? 'done';
    },
  });
  return { scheduler, composed, asked };
}

/** Stops the scheduler, letting the composition in flight end (its time passes on the fake clock). */
async function stopped(scheduler: ComposeScheduler) {
  const stopping = scheduler.stop();
  await vi.runOnlyPendingTimersAsync();
  await stopping;
}

test('requests made while a composition is in flight make one next composition, of all their triggers, at least COMPOSE_MIN_GAP_MS after', async () => {
  const { scheduler, composed, asked } = aScheduler({ tookMs: 50 });
  scheduler.request('start');
  expect(composed.map((c) => c.triggers)).toEqual([['start']]);
  expect(scheduler.composing()).toBe(true);
  scheduler.request('news', ['m-1']);
  scheduler.request('acted');
  scheduler.request('news', ['m-2']);
  await vi.advanceTimersByTimeAsync(COMPOSE_MIN_GAP_MS - 1);
  expect(composed).toHaveLength(1);
  await vi.advanceTimersByTimeAsync(1);
  expect(composed.map((c) => c.triggers)).toEqual([['start'], ['news', 'acted']]);
  expect(composed[1]!.at - composed[0]!.at).toBe(COMPOSE_MIN_GAP_MS);
  // Each request was told as it came, its machines with it: the step reads them.
  expect(asked).toEqual([
    ['start', undefined],
    ['news', ['m-1']],
    ['acted', undefined],
    ['news', ['m-2']],
  ]);
  await stopped(scheduler);
});

test('a composition that failed for an outage is asked again COMPOSE_RETRY_MS after, with its triggers', async () => {
  let outcome: 'done' | 'retry' = 'retry';
  const { scheduler, composed } = aScheduler({ outcome: () => outcome });
  scheduler.request('plan');
  await vi.advanceTimersByTimeAsync(0);
  outcome = 'done';
  await vi.advanceTimersByTimeAsync(COMPOSE_RETRY_MS - 1);
  expect(composed).toHaveLength(1);
  await vi.advanceTimersByTimeAsync(1);
  expect(composed.map((c) => c.triggers)).toEqual([['plan'], ['plan']]);
  await vi.advanceTimersByTimeAsync(COMPOSE_RETRY_MS * 3);
  expect(composed).toHaveLength(2);
  await stopped(scheduler);
});

test('a replica that does not serve composes nothing, and the triggers gathered are dropped when it stops serving', async () => {
  let serving = false;
  const { scheduler, composed } = aScheduler({ tookMs: 10, serving: () => serving });
  scheduler.request('news', ['m-1']);
  await vi.advanceTimersByTimeAsync(COMPOSE_EVERY_MS);
  expect(composed).toEqual([]);
  serving = true;
  scheduler.request('start');
  scheduler.request('acted');
  scheduler.clear();
  await vi.advanceTimersByTimeAsync(COMPOSE_MIN_GAP_MS * 2);
  expect(composed.map((c) => c.triggers)).toEqual([['start']]);
  await stopped(scheduler);
});

test('the serving replica composes every COMPOSE_EVERY_MS without being asked, and nothing once stopped', async () => {
  const { scheduler, composed } = aScheduler();
  await vi.advanceTimersByTimeAsync(COMPOSE_EVERY_MS * 2);
  expect(composed.map((c) => c.triggers)).toEqual([['minute'], ['minute']]);
  await stopped(scheduler);
  scheduler.request('acted');
  await vi.advanceTimersByTimeAsync(COMPOSE_EVERY_MS * 2);
  expect(composed).toHaveLength(2);
});

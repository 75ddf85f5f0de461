import { afterAll, beforeAll, expect, test } from 'vitest';
import type { CompositionSources } from '../../../src/services/status/composing/compose.js';
import { TAKEOVER_FROM_SHOWN_MACHINES } from '../../../src/services/status/composing/compose.js';
import { composeStep, FULL_COMPOSE_COST_FACTOR, FULL_COMPOSE_EVERY_MS, INCREMENTAL_MACHINES_MAX } from '../../../src/services/status/composing/step.js';
import type { MachineStatus } from '../../../src/services/status/composition.js';
import { freshStore } from '../../fixtures/services.js';

// The composer's choice of a full or an incremental composition, on a clock the test moves: the
// reconciliation (a full composition) comes every FULL_COMPOSE_EVERY_MS, or FULL_COMPOSE_COST_FACTOR
// times as long as the last full one took when that is longer (a million machines), and the minute
// asks no full composition of its own.

let store: Awaited<ReturnType<typeof freshStore>>;
const noSources: CompositionSources = { callsRunning: () => 0, handActsSince: () => ({ count: 0, repeatedCauses: [] }) };
const input = (seq: number) => ({ seq, controller: 'ctl', trigger: 'test', heartbeatSeconds: 10, sources: noSources });

beforeAll(async () => {
  store = await freshStore('compose_step');
});
afterAll(async () => {
  await store?.close();
});

/** A step whose clock reads `clock.ms`; a full composition "takes" `clock.fullTakesMs` (the clock moves on while it composes). */
function aStep(clock: { ms: number; fullTakesMs: number }) {
  // While a full composition is composed the step reads the clock twice: at its start, and at its end.
  let readsWhileComposing = 0;
  const step = composeStep(store.db, () => {
    if (readsWhileComposing > 0 && --readsWhileComposing === 0) clock.ms += clock.fullTakesMs;
    return clock.ms;
  });
  return {
    step,
    async full() {
      const next = step.take();
      expect(next.full).toBe(true);
      readsWhileComposing = 2;
      await step.compose(next, input(1));
    },
  };
}

test('a fast full composition is made again every FULL_COMPOSE_EVERY_MS; the minute alone asks an incremental one', async () => {
  const clock = { ms: 1_000_000, fullTakesMs: 50 };
  const { step, full } = aStep(clock);
  await full();
  step.ask('minute');
  clock.ms += FULL_COMPOSE_EVERY_MS / 2;
  expect(step.take()).toEqual({ full: false, machines: [], heard: [] });
  clock.ms += FULL_COMPOSE_EVERY_MS / 2;
  step.ask('minute');
  expect(step.take().full).toBe(true);
});

test('after a full composition that took 30 s the next is due FULL_COMPOSE_COST_FACTOR times that later, not a minute later', async () => {
  const clock = { ms: 1_000_000, fullTakesMs: 30_000 };
  const { step, full } = aStep(clock);
  const startedAt = clock.ms;
  await full();
  clock.ms = startedAt + 2 * FULL_COMPOSE_EVERY_MS;
  step.ask('minute');
  step.ask('news', ['m-1']);
  expect(step.take()).toEqual({ full: false, machines: ['m-1'], heard: [] });
  clock.ms = startedAt + FULL_COMPOSE_COST_FACTOR * 30_000;
  step.ask('minute');
  expect(step.take().full).toBe(true);
});

test('machines heard later are judged from memory, never read again nor counted towards a full composition; a full one takes none', async () => {
  const clock = { ms: 1_000_000, fullTakesMs: 50 };
  const { step, full } = aStep(clock);
  await full();
  step.ask(
    'heard',
    Array.from({ length: INCREMENTAL_MACHINES_MAX + 1 }, (_, i) => `m-${i}`),
  );
  step.ask('news', ['m-1']);
  const taken = step.take();
  expect(taken.full).toBe(false);
  expect(taken.machines).toEqual(['m-1']);
  expect(taken.heard).toHaveLength(INCREMENTAL_MACHINES_MAX + 1);
  step.ask('heard', ['m-2']);
  step.ask('acted');
  expect(step.take()).toEqual({ full: true, machines: [], heard: [] });
});

test('an acting verb still asks a full composition at once, whatever the last one cost', async () => {
  const clock = { ms: 1_000_000, fullTakesMs: 30_000 };
  const { step, full } = aStep(clock);
  await full();
  step.ask('acted');
  expect(step.take().full).toBe(true);
});

test('a takeover at a mesh of TAKEOVER_FROM_SHOWN_MACHINES machines starts from the composition followed, not the store; a smaller one reads the store', async () => {
  const heardAt = new Date().toISOString();
  const shownOf = (n: number) => ({
    machines: Array.from(
      { length: n },
      (_, i): MachineStatus => ({ name: `m-${String(i).padStart(6, '0')}`, site: 'eu-1', state: 'UP', lastHeardAt: heardAt, modules: [], holdings: [] }),
    ),
    seats: [],
  });
  const takeover = (shown: ReturnType<typeof shownOf>) => ({ ...input(1), trigger: 'takeover', shown });
  // The store of this file holds no machine: what the composition shows came from the one followed.
  const large = composeStep(store.db);
  expect((await large.compose(large.take(), takeover(shownOf(TAKEOVER_FROM_SHOWN_MACHINES)))).machines).toHaveLength(TAKEOVER_FROM_SHOWN_MACHINES);
  expect(large.take().full).toBe(false);
  const small = composeStep(store.db);
  expect((await small.compose(small.take(), takeover(shownOf(TAKEOVER_FROM_SHOWN_MACHINES - 1)))).machines).toHaveLength(0);
});

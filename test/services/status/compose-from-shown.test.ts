import { afterAll, beforeAll, expect, test } from 'vitest';
import { type Heartbeat, recordHeartbeats } from '../../../src/services/machines/machines.js';
import { type ComposeInput, type CompositionSources, compose, composeFromShown } from '../../../src/services/status/composing/compose.js';
import { composeStep, incrementalReadsAtMost } from '../../../src/services/status/composing/step.js';
import type { Composition } from '../../../src/services/status/composition.js';
import { coarsenLastHeard } from '../../../src/services/status/replicating/stream-publisher.js';
import { freshStore } from '../../fixtures/services.js';

// A takeover at a large mesh starts from the composition the new serving replica followed, not
// from the whole store (composeFromShown): what it composes must be what a full composition of
// the store and its memory gives at the same instant — beats after the composition it started
// from, a beat only its memory holds, a machine new to the mesh, seats held by claims through an
// alias, the controller's seat held by the replica that served before. (A change of modules written
// meanwhile waits for the reconciliation: docs/status.md.)

let store: Awaited<ReturnType<typeof freshStore>>;
const CONTROLLER = 'ctl';
const noSources: CompositionSources = { callsRunning: () => 0, handActsSince: () => ({ count: 0, repeatedCauses: [] }) };
const T0 = Date.parse('2026-12-03T12:00:00.000Z');

beforeAll(async () => {
  store = await freshStore('from_shown');
  for (const name of ['queue', 'store', 'kept', CONTROLLER]) {
    await store.db.insertInto('seat').values({ name, accepts: '[]', emits: '[]', serves: '[]' }).execute();
  }
  await store.db.insertInto('seat_alias').values({ alias: 'q-alias', seat: 'queue' }).execute();
});
afterAll(async () => {
  await store?.close();
});

const beat = (machine: string, atMs: number, modules: string[], claims: Record<string, string[]> = {}, site = 'eu-1'): Heartbeat => ({
  machine,
  site,
  modules,
  claims,
  at: new Date(atMs),
});

/** This replica's memory of last-heard: later than the store's checkpoint for the machines it holds. */
function memory(heard: Record<string, number>): NonNullable<ComposeInput['heard']> {
  return {
    lastHeardAt: (machine, storedIso) =>
      heard[machine] !== undefined && heard[machine]! > Date.parse(storedIso) ? new Date(heard[machine]!).toISOString() : storedIso,
    forEachHeard: (visit) => {
      for (const [machine, ms] of Object.entries(heard)) visit(machine, ms);
    },
  };
}

const input = (seq: number, nowMs: number, servingReplica: string, heard: Record<string, number>): ComposeInput => ({
  seq,
  controller: CONTROLLER,
  servingReplica,
  trigger: 'takeover',
  heartbeatSeconds: 10,
  sources: noSources,
  now: new Date(nowMs),
  heardUntil: new Date(nowMs),
  heard: memory(heard),
});

/** Everything but the fields that describe the composing itself. */
const mesh = (c: Composition) => {
  const { seq: _seq, composedAt: _at, tookMs: _took, trigger: _trigger, ...rest } = c;
  return rest;
};

test('a takeover composed from the composition followed equals a full composition of the store and memory at the same instant', async () => {
  await recordHeartbeats(store.db, [
    beat('a', T0, ['broker'], { broker: ['q-alias'] }),
    beat('b', T0, ['web']),
    beat('c', T0, ['agent'], {}, 'us-1'),
    beat('d', T0 - 50_000, ['agent']),
  ]);
  await store.db.insertInto('seat_holding').values({ seat: 'kept', machine: 'b', module: 'web', scope: 'site' }).execute();
  const before = await compose(store.db, input(1, T0 + 1_000, 'r1', {}));
  expect(before.seats.find((s) => s.name === CONTROLLER)?.holders).toEqual([{ machine: 'r1', module: 'mesh-gateway', site: null, derived: true }]);

  // After it: a beats again (its checkpoint written), e is new (written), b is heard only in memory, d goes SILENT by age.
  await recordHeartbeats(store.db, [beat('a', T0 + 5_000, ['broker'], { broker: ['q-alias'] }), beat('e', T0 + 6_000, ['agent'])]);
  const heard = { a: T0 + 5_000, e: T0 + 6_000, b: T0 + 7_000 };
  const at = T0 + 18_000;
  const fromShown = await composeFromShown(store.db, before, input(2, at, 'r2', heard), incrementalReadsAtMost);
  const full = await compose(store.db, input(2, at, 'r2', heard));
  // As subscribers get it: an instant heard less than LAST_HEARD_GRAIN_MS after the one shown is not
  // shown (the takeover's view keeps the status shown; the publisher coarsens the full one alike).
  expect(mesh(fromShown.composition)).toEqual(mesh(coarsenLastHeard(before, full)));
  expect(fromShown.whole).toBe(false);
  expect(fromShown.composition.machines.map((m) => [m.name, m.state])).toEqual([
    ['a', 'UP'],
    ['b', 'UP'],
    ['c', 'LATE'],
    ['d', 'SILENT'],
    ['e', 'UP'],
  ]);
  expect(fromShown.composition.seats.find((s) => s.name === CONTROLLER)?.holders).toEqual([
    { machine: 'r2', module: 'mesh-gateway', site: null, derived: true },
  ]);
});

test('a takeover while more machines are heard and not shown than an incremental composition reads again composes the whole store', async () => {
  await recordHeartbeats(store.db, [beat('p', T0, ['agent']), beat('q', T0, ['agent'])]);
  const before = await compose(store.db, input(1, T0 + 1_000, 'r1', {}));
  // Coming up: r and s are new since, and p beats again.
  await recordHeartbeats(store.db, [beat('p', T0 + 5_000, ['agent']), beat('r', T0 + 6_000, ['agent']), beat('s', T0 + 6_000, ['agent'])]);
  const heard = { p: T0 + 5_000, r: T0 + 6_000, s: T0 + 6_000 };
  const at = T0 + 8_000;
  const full = await compose(store.db, input(2, at, 'r2', heard));
  const fromShown = await composeFromShown(store.db, before, input(2, at, 'r2', heard), () => 1);
  expect(mesh(fromShown.composition)).toEqual(mesh(full));
  // It says it read the whole store: the reconciliation then waits as after any full composition.
  expect(fromShown.whole).toBe(true);
  // Composed from what was shown, p's new instant would not be shown (within the grain).
  expect(mesh(fromShown.composition)).not.toEqual(mesh(coarsenLastHeard(before, full)));
});

test('the lease taken back in the term it lapsed in: the step goes on from its view, caught up from memory, where a takeover composes the whole store', async () => {
  await recordHeartbeats(store.db, [beat('u', T0, ['agent']), beat('v', T0, ['agent'])]);
  const step = composeStep(store.db, () => T0 + 1_000); // its clock: the reconciliation not due
  step.ask('start');
  const first = step.take();
  expect(first.full).toBe(true);
  const before = await step.compose(first, input(1, T0 + 1_000, 'r1', {}));

  // A stall past the lease's trust, the lease taken back in the same term; meanwhile u beat again (memory) and w is new (written).
  step.lapse();
  await recordHeartbeats(store.db, [beat('w', T0 + 66_000, ['agent'])]);
  const heard = { u: T0 + 65_000, w: T0 + 66_000 };
  step.resume();
  step.ask('resumed');
  const resumed = step.take();
  expect(resumed.full).toBe(false);
  const at = T0 + 68_000;
  const composition = await step.compose(resumed, { ...input(2, at, 'r1', heard), trigger: 'resumed' });
  // As subscribers get a full one (instants within the grain of the one shown are not shown again).
  expect(mesh(composition)).toEqual(mesh(coarsenLastHeard(before, await compose(store.db, input(2, at, 'r1', heard)))));
  expect(composition.machines.find((m) => m.name === 'u')?.lastHeardAt).toBe(new Date(T0 + 65_000).toISOString());
  expect(composition.machines.map((m) => m.name)).toContain('w');

  // Lapsed, then taken over (another replica may have composed since): the view is dropped, the next composition full.
  step.lapse();
  step.forget();
  step.resume();
  step.ask('takeover');
  expect(step.take().full).toBe(true);
});

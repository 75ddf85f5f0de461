import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { forgetMachine } from '../../../src/services/machines/forget.js';
import { type Heartbeat, recordHeartbeats } from '../../../src/services/machines/machines.js';
import {
  type ComposeInput,
  type CompositionSources,
  compose,
  composeFully,
  composeIncrementally,
  meshSources,
} from '../../../src/services/status/composing/compose.js';
import { nextCrossing } from '../../../src/services/status/composing/crossing.js';
import { type Composition, LAST_HEARD_GRAIN_MS } from '../../../src/services/status/composition.js';
import { anAgent, eventually } from '../../fixtures/live.js';
import { freshStore, startTestGateway, type TestEnv, type TestGateway, testEnv } from '../../fixtures/services.js';

let store: Awaited<ReturnType<typeof freshStore>>;

const CONTROLLER = 'ctl';
const MACHINES = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
const SITES = ['eu-1', 'us-1'];
const MODULES = ['broker', 'web', 'agent'];
// Seats claimed by name or by alias; `kept` and `ctl` have holdings on record, so never derived.
const CLAIMS = ['queue', 'q-alias', 'store', 'kept', 'ctl', 'nobody-knows'];
const noSources: CompositionSources = { callsRunning: () => 0, handActsSince: () => ({ count: 0, repeatedCauses: [] }) };
const HEARTBEAT_S = 10;

beforeAll(async () => {
  store = await freshStore('incremental');
  for (const name of ['queue', 'store', 'kept', 'lonely', CONTROLLER]) {
    await store.db.insertInto('seat').values({ name, accepts: '[]', emits: '[]', serves: '[]' }).execute();
  }
  await store.db.insertInto('seat_alias').values({ alias: 'q-alias', seat: 'queue' }).execute();
});
afterAll(async () => {
  await store?.close();
});

/** Everything but the fields that describe the composing itself (seq, when, how long, why). */
const mesh = (c: Composition) => {
  const { seq: _seq, composedAt: _at, tookMs: _took, trigger: _trigger, ...rest } = c;
  return rest;
};

/** Same value, same key order, same list order: what a subscriber would receive, byte for byte. */
function expectSame(incremental: Composition, full: Composition) {
  expect(mesh(incremental)).toEqual(mesh(full));
  expect(JSON.stringify(mesh(incremental))).toBe(JSON.stringify(mesh(full)));
}

const beat = (now: number) =>
  fc
    .record({
      machine: fc.constantFrom(...MACHINES),
      site: fc.option(fc.constantFrom(...SITES), { nil: undefined }),
      modules: fc.subarray(MODULES),
      claims: fc.dictionary(fc.constantFrom(...MODULES), fc.subarray(CLAIMS), { maxKeys: 3 }),
      // Heard from a moment ago to past SILENT, so every state is met.
      agoS: fc.integer({ min: 0, max: 90 }),
    })
    .map(({ agoS, ...b }): Heartbeat => ({ ...b, at: new Date(now - agoS * 1000) }));

/** One step of news: a batch of heartbeats, or time passing with none (states move by age alone). */
const step = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('beats' as const), beats: fc.array(beat(0), { minLength: 1, maxLength: 6 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('time' as const), passS: fc.integer({ min: 1, max: 40 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('plan' as const), plan: fc.integer({ min: 1, max: 3 }) }) },
  // forgetMachine is an acting verb (a full composition follows it); the view copes with it named as news too.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('forget' as const), machine: fc.constantFrom(...MACHINES) }) },
);

test('after any sequence of news (and machines forgotten) the incremental composition is the full SQL composition, field for field and in order', async () => {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), fc.boolean(), async (steps, serving) => {
      run++;
      await sql`truncate machine, assignment, seat_holding, plan_apply, plan cascade`.execute(store.db);
      let now = Date.parse('2026-12-01T12:00:00Z') + run * 3_600_000;
      const input = (seq: number): ComposeInput => ({
        seq,
        controller: CONTROLLER,
        servingReplica: serving ? 'replica-1' : undefined,
        trigger: 'test',
        heartbeatSeconds: HEARTBEAT_S,
        sources: noSources,
        now: new Date(now),
      });
      // Two machines known from the start, one holding `kept` and `ctl` on record.
      await recordHeartbeats(store.db, [
        { machine: 'a', site: 'eu-1', modules: ['broker'], claims: { broker: ['queue'] }, at: new Date(now) },
        { machine: 'b', modules: ['web'], at: new Date(now - 20_000) },
      ]);
      await store.db
        .insertInto('seat_holding')
        .values([
          { seat: 'kept', machine: 'a', module: 'broker', scope: 'site' },
          { seat: CONTROLLER, machine: 'b', module: 'web', scope: 'site' },
        ])
        .execute();
      const { view } = await composeFully(store.db, input(1));
      let seq = 1;
      for (const s of steps) {
        let touched: string[] = [];
        if (s.kind === 'beats') {
          const beats = s.beats.map((b) => ({ ...b, at: new Date(now + b.at.getTime()) }));
          await recordHeartbeats(store.db, beats);
          touched = [...new Set(beats.map((b) => b.machine))];
        } else if (s.kind === 'forget') {
          await forgetMachine(store.db, s.machine).catch(() => undefined); // unknown, or holding a seat: refused
          touched = [s.machine];
        } else if (s.kind === 'time') {
          now += s.passS * 1000;
        } else {
          await store.db
            .insertInto('plan')
            .values({ id: `p${s.plan}`, seat: 'queue', build: `b${s.plan}`, tiers: JSON.stringify([['a']]), state: 'OPEN', opened_at: new Date(now) })
            .onConflict((oc) => oc.column('id').doUpdateSet({ state: 'STOPPED', stop_reason: 'by the test' }))
            .execute();
        }
        seq++;
        const incremental = await composeIncrementally(store.db, view, touched, input(seq));
        const full = await compose(store.db, input(seq));
        expectSame(incremental, full);
        // The crossing timer is set from the view's pass: the same instant as from the composition.
        expect(view.crossingMs).toBe(nextCrossing(full, HEARTBEAT_S)?.getTime());
      }
    }),
    { numRuns: 40 },
  );
}, 120_000);

test('a machine the view never saw is placed in name order, its holdings joining the seats it claims', async () => {
  await sql`truncate machine, assignment, seat_holding, plan_apply, plan cascade`.execute(store.db);
  const at = new Date();
  const input: ComposeInput = { seq: 1, controller: CONTROLLER, trigger: 'test', heartbeatSeconds: HEARTBEAT_S, sources: noSources, now: at };
  await recordHeartbeats(store.db, [
    { machine: 'a', modules: ['broker'], claims: { broker: ['queue'] }, at },
    { machine: 'c', modules: ['broker'], claims: { broker: ['queue'] }, at },
  ]);
  const { view } = await composeFully(store.db, input);
  await recordHeartbeats(store.db, [{ machine: 'b', site: 'eu-1', modules: ['broker'], claims: { broker: ['q-alias'] }, at }]);
  const incremental = await composeIncrementally(store.db, view, ['b'], { ...input, seq: 2 });
  expect(incremental.machines.map((m) => m.name)).toEqual(['a', 'b', 'c']);
  expect(incremental.seats.find((s) => s.name === 'queue')?.holders.map((h) => h.machine)).toEqual(['a', 'b', 'c']);
  expectSame(incremental, await compose(store.db, { ...input, seq: 2 }));
});

test('a machine news did not name keeps the very same object from one incremental composition to the next', async () => {
  await sql`truncate machine, assignment, seat_holding, plan_apply, plan cascade`.execute(store.db);
  const at = new Date();
  const input: ComposeInput = { seq: 1, controller: CONTROLLER, trigger: 'test', heartbeatSeconds: HEARTBEAT_S, sources: noSources, now: at };
  await recordHeartbeats(store.db, [
    { machine: 'a', modules: ['broker'], at },
    { machine: 'b', modules: ['web'], at },
  ]);
  const { view, composition: first } = await composeFully(store.db, input);
  await recordHeartbeats(store.db, [{ machine: 'b', modules: ['web', 'agent'], at }]);
  const next = await composeIncrementally(store.db, view, ['b'], { ...input, seq: 2 });
  expect(next.machines[0]).toBe(first.machines[0]);
  expect(next.machines[1]).toMatchObject({ name: 'b', modules: ['agent', 'web'] });
});

test('a machine shown UP and heard again within LAST_HEARD_GRAIN_MS keeps its object; later, or raised from LATE, or turning LATE, it shows the true instant', async () => {
  await sql`truncate machine, assignment, seat_holding, plan_apply, plan cascade`.execute(store.db);
  const t0 = Date.parse('2026-12-05T12:00:00.000Z');
  const heardMs = new Map<string, number>();
  const input = (seq: number, nowMs: number): ComposeInput => ({
    seq,
    controller: CONTROLLER,
    trigger: 'test',
    heartbeatSeconds: HEARTBEAT_S,
    sources: noSources,
    now: new Date(nowMs),
    heard: {
      lastHeardAt: (m, stored) => (heardMs.has(m) ? new Date(Math.max(heardMs.get(m)!, Date.parse(stored))).toISOString() : stored),
      lastMs: (m) => heardMs.get(m),
    },
  });
  await recordHeartbeats(store.db, [
    { machine: 'a', modules: ['broker'], at: new Date(t0) },
    { machine: 'b', modules: ['web'], at: new Date(t0) },
  ]);
  const { view, composition: first } = await composeFully(store.db, input(1, t0 + 1_000));
  const hear = async (seq: number, nowMs: number, beats: Record<string, number>) => {
    for (const [m, at] of Object.entries(beats)) heardMs.set(m, at);
    return composeIncrementally(store.db, view, [], input(seq, nowMs), Object.keys(beats));
  };
  // Heard 10 s later: nothing a subscriber would see changed, so nothing changed.
  const sooner = await hear(2, t0 + 11_000, { a: t0 + 10_000 });
  expect(sooner.machines[0]).toBe(first.machines[0]);
  // b not heard: LATE past 1.5 beats, shown with its true instant.
  const late = await hear(3, t0 + 20_000, { a: t0 + 19_000 });
  expect(late.machines[0]).toBe(first.machines[0]);
  expect(late.machines[1]).toMatchObject({ name: 'b', state: 'LATE', lastHeardAt: new Date(t0).toISOString() });
  // b heard again: UP, with the instant heard.
  const raised = await hear(4, t0 + 21_000, { b: t0 + 20_500 });
  expect(raised.machines[1]).toMatchObject({ name: 'b', state: 'UP', lastHeardAt: new Date(t0 + 20_500).toISOString() });
  // a heard a grain after the instant shown: the true instant.
  const grain = await hear(5, t0 + LAST_HEARD_GRAIN_MS + 1_000, { a: t0 + LAST_HEARD_GRAIN_MS, b: t0 + LAST_HEARD_GRAIN_MS });
  expect(grain.machines[0]).toMatchObject({ name: 'a', state: 'UP', lastHeardAt: new Date(t0 + LAST_HEARD_GRAIN_MS).toISOString() });
  // a kept at t0 + 10 s's status while heard sooner, then silent: LATE shows when it was last heard, not the instant kept.
  const turned = await hear(6, t0 + LAST_HEARD_GRAIN_MS + 5_000, { a: t0 + LAST_HEARD_GRAIN_MS + 4_000 });
  expect(turned.machines[0]).toBe(grain.machines[0]);
  const aLate = await composeIncrementally(store.db, view, [], input(7, t0 + LAST_HEARD_GRAIN_MS + 25_000));
  expect(aLate.machines[0]).toMatchObject({ name: 'a', state: 'LATE', lastHeardAt: new Date(t0 + LAST_HEARD_GRAIN_MS + 4_000).toISOString() });
});

describe('on a running gateway', () => {
  let env: TestEnv;
  let gw: TestGateway;
  let agent: Awaited<ReturnType<typeof anAgent>>;
  beforeAll(async () => {
    env = await testEnv('incremental_gw');
    gw = await startTestGateway(env.env);
    agent = await anAgent();
    await eventually(() => gw.mesh.status.current(), 'the first composition');
  });
  afterAll(async () => {
    await agent?.close();
    await gw?.stop();
    await env?.cleanup();
  });

  test('news composes incrementally on the serving replica, and what subscribers get equals the full composition', async () => {
    const fullBefore = gw.composer.stats.full;
    const incrementalBefore = gw.composer.stats.incremental;
    for (let i = 0; i < 20; i++) agent.heartbeat(env.subjects, `inc-${i}`, { site: `s-${i % 3}`, modules: ['broker'], claims: { broker: ['queue'] } });
    const seen = await eventually(() => {
      const c = gw.mesh.status.current()!;
      return c.machines.filter((m) => m.name.startsWith('inc-')).length === 20 && c.trigger.includes('news') ? c : undefined;
    }, 'a composition with the 20 machines');
    expect(gw.composer.stats.incremental).toBeGreaterThan(incrementalBefore);
    expect(gw.composer.stats.full).toBe(fullBefore);
    const full = await compose(gw.mesh.db, {
      seq: seen.seq,
      controller: gw.config.controller,
      servingReplica: gw.config.replica,
      trigger: 'test',
      heartbeatSeconds: gw.config.heartbeatSeconds,
      sources: meshSources(gw.mesh),
      now: new Date(seen.composedAt),
      heardUntil: new Date(seen.heardUntil!),
    });
    expectSame(seen, full);
  });

  test('a request naming no machines, or names that are not names, makes a full composition (news of an older gateway, a hostile body)', async () => {
    const subject = `${env.subjects}.compose`;
    for (const body of [{ triggers: ['news'] }, { triggers: ['news'], machines: ['not.a.name'] }, { triggers: ['news'], machines: 'inc-1' }]) {
      const fullBefore = gw.composer.stats.full;
      agent.nc.publish(subject, JSON.stringify(body));
      await eventually(() => gw.composer.stats.full > fullBefore, `a full composition after ${JSON.stringify(body)}`);
    }
    const incrementalBefore = gw.composer.stats.incremental;
    agent.nc.publish(subject, JSON.stringify({ triggers: ['news'], machines: ['inc-1', 'inc-2'] }));
    await eventually(() => gw.composer.stats.incremental > incrementalBefore, 'an incremental composition');
  });

  test('news another replica wrote reaches the serving replica with its machine names; only the serving one composes', async () => {
    const other = await startTestGateway(env.env);
    try {
      await eventually(() => other.mesh.status.current(), 'a composition on the second replica');
      expect(other.composer.serving()).toBe(false);
      const incrementalBefore = gw.composer.stats.incremental;
      // Written as the other replica's ingest writes a batch, then handed to the composer as its ingest hands it.
      await recordHeartbeats(other.mesh.db, [{ machine: 'via-other', site: 'eu-2', modules: ['broker'], claims: { broker: ['queue'] }, at: new Date() }]);
      other.mesh.events.emit('news', 'machine', ['via-other']);
      const seen = await eventually(() => {
        const c = other.mesh.status.current()!;
        return c.machines.some((m) => m.name === 'via-other') ? c : undefined;
      }, 'the machine in a composition on the second replica');
      expect(gw.composer.stats.incremental).toBeGreaterThan(incrementalBefore);
      expect(other.composer.stats.compositions).toBe(0);
      expect(seen.seats.find((s) => s.name === 'queue')?.holders.some((h) => h.machine === 'via-other' && h.site === 'eu-2')).toBe(true);
    } finally {
      await other.stop();
    }
  });

  test('an acting verb makes the next composition a full one', async () => {
    const fullBefore = gw.composer.stats.full;
    gw.composer.poke('acted');
    await eventually(() => gw.composer.stats.full > fullBefore, 'a full composition');
  });

  test('the serving replica asks its own composer, not itself over NATS', async () => {
    const heard: string[] = [];
    const sub = agent.nc.subscribe(`${env.subjects}.compose`, { callback: (_err, msg) => void heard.push(msg.string()) });
    await agent.nc.flush();
    const fullBefore = gw.composer.stats.full;
    gw.composer.poke('acted');
    await eventually(() => gw.composer.stats.full > fullBefore, 'a full composition');
    sub.unsubscribe();
    expect(heard).toEqual([]);
  });

  test('a trigger this gateway does not know (another version’s) is read as asked, and asks a full composition', async () => {
    const fullBefore = gw.composer.stats.full;
    agent.nc.publish(`${env.subjects}.compose`, JSON.stringify({ triggers: ['from-the-future'], machines: [] }));
    const seen = await eventually(() => {
      const c = gw.mesh.status.current()!;
      return gw.composer.stats.full > fullBefore && c.trigger.includes('asked') ? c : undefined;
    }, 'a full composition asked');
    expect(seen.trigger).not.toContain('from-the-future');
  });
});

describe('a beat that changes nothing stored', () => {
  let env: TestEnv;
  let serving: TestGateway;
  let other: TestGateway;
  let agent: Awaited<ReturnType<typeof anAgent>>;
  beforeAll(async () => {
    env = await testEnv('incremental_heard');
    const quick = { ...env.env, MESH_HEARTBEAT_S: '0.5' };
    serving = await startTestGateway(quick);
    other = await startTestGateway(quick);
    agent = await anAgent();
    await eventually(() => other.mesh.status.current(), 'a composition on the second replica');
  });
  afterAll(async () => {
    await agent?.close();
    await other?.stop();
    await serving?.stop();
    await env?.cleanup();
  });

  test('raises a LATE machine to UP from memory: no replica asks for it to be read again, here or over NATS', async () => {
    const quiet = Array.from({ length: 12 }, (_, i) => `quiet-${i}`);
    const beatAll = () => {
      for (const machine of quiet) agent.heartbeat(env.subjects, machine, { site: 'eu-1', modules: ['broker'] });
    };
    const states = () => quiet.map((name) => serving.mesh.status.current()?.machines.find((m) => m.name === name)?.state);
    beatAll();
    await eventually(() => states().every((s) => s === 'LATE'), 'the quiet machines shown LATE');
    // What each replica's ingest tells its composer to read again from the store, and what crosses NATS.
    const toRead: string[] = [];
    const onNews = (_kind: string, machines?: readonly string[]) => void toRead.push(...(machines ?? []));
    for (const g of [serving, other]) g.mesh.events.on('news', onNews);
    const asked: string[] = [];
    const sub = agent.nc.subscribe(`${env.subjects}.compose`, {
      callback: (_err, msg) => void asked.push(...((msg.json() as { machines?: string[] }).machines ?? [])),
    });
    try {
      await agent.nc.flush();
      const incrementalBefore = serving.composer.stats.incremental;
      beatAll();
      await eventually(() => states().every((s) => s === 'UP'), 'the quiet machines shown UP again');
      await eventually(async () => (await other.mesh.hearing.refresh()).pending === 0, 'every beat taken in');
      await agent.nc.flush();
      expect(toRead.filter((name) => quiet.includes(name))).toEqual([]);
      expect(asked.filter((name) => quiet.includes(name))).toEqual([]);
      expect(serving.composer.stats.incremental).toBeGreaterThan(incrementalBefore);
    } finally {
      sub.unsubscribe();
      for (const g of [serving, other]) g.mesh.events.off('news', onNews);
    }
  });
});

import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { recordHeartbeats } from '../../../src/services/machines/machines.js';
import { push } from '../../../src/services/plans/plans.js';
import { defineSeat } from '../../../src/services/seats/define.js';
import { type CompositionSources, compose } from '../../../src/services/status/composing/compose.js';
import { COMPOSE_MIN_GAP_MS } from '../../../src/services/status/composing/scheduler.js';
import type { Composition } from '../../../src/services/status/composition.js';
import { followLatest } from '../../../src/services/status/live/latest.js';
import { compositionAssembler } from '../../../src/services/status/replicating/assemble.js';
import { encodeComposition } from '../../../src/services/status/replicating/encode.js';
import { useGateway } from '../../fixtures/gateway.js';
import { anAgent, eventually, sseSubscribe, wsSubscribe } from '../../fixtures/live.js';
import { freshStore } from '../../fixtures/services.js';

const { gw, env } = useGateway('status');
let agent: Awaited<ReturnType<typeof anAgent>>;

beforeAll(async () => {
  agent = await anAgent();
  await eventually(() => gw.mesh.status.current(), 'the first composition');
});
afterAll(async () => {
  await agent?.close();
});

const STATUS = `seq composedAt tookMs trigger
  machines { name site state lastHeardAt modules holdings { seat module derived } }
  seats { name held holders { machine module site derived } }
  unheldSeats callsRunning handActsThisWeek repeatedCauses { cause count firstAt lastAt }
  plans { id seat build state tier tiers behind openedAt endedAt }`;

const latest = () => gw.mesh.status.current()!;
const noSources: CompositionSources = { callsRunning: () => 0, handActsSince: () => ({ count: 0, repeatedCauses: [] }) };

test('status answers the last composition: machines with state and holdings, seats held or not, open plans', async () => {
  await defineSeat(gw.mesh.db, gw.mesh.catalogue, { name: 'lonely', replicated: true });
  // Defined by the service itself (no hand-act to count), so the composer is told as the verb tells it.
  gw.mesh.events.emit('acted', 'defineSeat');
  agent.heartbeat(env.subjects, 'st-1', { site: 'eu-1', modules: ['broker', 'web'], claims: { broker: ['queue'] } });
  // Last heard 20 s ago (liveness is judged by when the gateway heard a machine, not by its `at`).
  await recordHeartbeats(gw.mesh.db, [
    { machine: 'st-2', site: 'us-1', modules: ['broker'], claims: { broker: ['queue'] }, at: new Date(Date.now() - 20_000) },
  ]);
  gw.mesh.events.emit('news', 'machine', ['st-2']);
  await eventually(() => latest()?.machines.length === 2, 'a composition with both machines');
  const plan = await push(gw.mesh, { seat: 'queue', build: 'b-1' });
  await eventually(() => latest().plans.length === 1, 'a composition with the plan');

  const { data, errors } = await gw.gql(`{ status { ${STATUS} } }`);
  expect(errors).toBeUndefined();
  const status = data.status;
  expect(status.seq).toBe(latest().seq);
  expect(status.trigger).toMatch(/plan/);
  expect(status.tookMs).toBeGreaterThan(0);
  expect(status.machines).toEqual([
    {
      name: 'st-1',
      site: 'eu-1',
      state: 'UP',
      lastHeardAt: expect.any(String),
      modules: ['broker', 'web'],
      holdings: [{ seat: 'queue', module: 'broker', derived: true }],
    },
    {
      name: 'st-2',
      site: 'us-1',
      state: 'LATE',
      lastHeardAt: expect.any(String),
      modules: ['broker'],
      holdings: [{ seat: 'queue', module: 'broker', derived: true }],
    },
  ]);
  expect(status.seats.find((s: { name: string }) => s.name === 'queue')).toEqual({
    name: 'queue',
    held: true,
    holders: [
      { machine: 'st-1', module: 'broker', site: 'eu-1', derived: true },
      { machine: 'st-2', module: 'broker', site: 'us-1', derived: true },
    ],
  });
  expect(status.seats.find((s: { name: string }) => s.name === 'lonely')).toEqual({ name: 'lonely', held: false, holders: [] });
  expect(status.unheldSeats).toContain('lonely');
  expect(status.unheldSeats).not.toContain('queue');
  expect(status.plans).toEqual([
    {
      id: plan.id,
      seat: 'queue',
      build: 'b-1',
      state: 'OPEN',
      tier: 0,
      tiers: [['st-1'], ['st-2']],
      behind: null,
      openedAt: expect.any(String),
      endedAt: null,
    },
  ]);
  expect(status).toMatchObject({ callsRunning: 0, handActsThisWeek: 0, repeatedCauses: [] });
});

test('a composition takes the same few SQL statements whatever the size of the mesh', async () => {
  const store = await freshStore('compose_statements');
  try {
    const count = async () => {
      store.statements.reset();
      await compose(store.db, { seq: 1, controller: 'test-controller', trigger: 'test', heartbeatSeconds: 10, sources: noSources });
      return store.statements.count;
    };
    await recordHeartbeats(store.db, [{ machine: 'one', modules: ['broker'], claims: { broker: ['queue'] }, at: new Date() }]);
    const small = await count();
    const beats = Array.from({ length: 500 }, (_, i) => ({
      machine: `m${i}`,
      site: `s${i % 7}`,
      modules: ['broker', 'web'],
      claims: { broker: ['queue'] },
      at: new Date(),
    }));
    await recordHeartbeats(store.db, beats);
    for (let i = 0; i < 50; i++) await defineSeat(store.db, gw.mesh.catalogue, { name: `seat-${i}` });
    const large = await count();
    expect(small).toBe(large);
    expect(large).toBeLessThanOrEqual(6);
  } finally {
    await store.close();
  }
});

test('1,000 news messages in a burst make a handful of compositions, not 1,000', async () => {
  const seen: Composition[] = [];
  const unsubscribe = gw.mesh.status.subscribe((c) => seen.push(c));
  const before = gw.composer.stats.compositions;
  for (let i = 0; i < 1000; i++) agent.heartbeat(env.subjects, `burst-${i}`, { site: `site-${i % 5}`, modules: ['broker'] });
  await eventually(() => latest().machines.filter((m) => m.name.startsWith('burst-')).length === 1000, 'a composition with all 1,000 machines', 20_000);
  // A sentinel sent after the burst: once it is composed, so is every composition the burst asked for.
  agent.heartbeat(env.subjects, 'burst-sentinel', { site: 'site-0', modules: ['broker'] });
  await eventually(() => latest().machines.some((m) => m.name === 'burst-sentinel'), 'the sentinel after the burst composed', 20_000);
  unsubscribe();
  const made = gw.composer.stats.compositions - before;
  expect(made).toBeGreaterThanOrEqual(1);
  expect(made).toBeLessThanOrEqual(8);
  expect(seen.length).toBe(made);
  for (let i = 1; i < seen.length; i++) {
    expect(seen[i]!.seq).toBeGreaterThan(seen[i - 1]!.seq);
    // At most one composition starts per COMPOSE_MIN_GAP_MS (composedAt is its start).
    expect(Date.parse(seen[i]!.composedAt) - Date.parse(seen[i - 1]!.composedAt)).toBeGreaterThanOrEqual(COMPOSE_MIN_GAP_MS - 5);
  }
});

test('a graphql-ws subscriber and an SSE subscriber each get the current composition, then the next', async () => {
  const current = latest().seq;
  const ws = wsSubscribe(gw.url, 'subscription { status { seq trigger machines { name } } }');
  const sse = sseSubscribe(gw.url, 'subscription { status { seq trigger machines { name } } }');
  try {
    const [sseFirst] = await sse.atLeast(1);
    const [wsFirst] = await ws.atLeast(1);
    expect(wsFirst.status.seq).toBe(current);
    expect(sseFirst.status.seq).toBe(current);
    agent.heartbeat(env.subjects, 'sub-1', { modules: ['broker'] });
    const [, wsNext] = await ws.atLeast(2);
    const [, sseNext] = await sse.atLeast(2);
    expect(wsNext.status.seq).toBeGreaterThan(current);
    expect(sseNext.status.seq).toBe(wsNext.status.seq);
    expect(wsNext.status.machines.map((m: { name: string }) => m.name)).toContain('sub-1');
  } finally {
    ws.close();
    sse.close();
  }
});

test('a slow subscriber skips to the latest composition instead of queueing the ones between', async () => {
  const iterator = followLatest(gw.mesh.status);
  const first = await iterator.next();
  expect(first.value!.seq).toBe(latest().seq);
  for (let i = 0; i < 3; i++) {
    const seq = latest().seq;
    gw.composer.request('asked');
    await eventually(() => latest().seq > seq, 'a new composition');
  }
  const next = await iterator.next();
  expect(next.value!.seq).toBe(latest().seq);
  expect(next.value!.seq).toBeGreaterThanOrEqual(first.value!.seq + 3);
  const waiting = iterator.next();
  await iterator.return!();
  expect(await waiting).toEqual({ value: undefined, done: true });
});

test('a composition larger than a NATS message travels in parts and arrives whole, parsed piece by piece past 1 MB', async () => {
  // Over 1 MB of JSON, with two-byte characters throughout: some fall across the pieces it is parsed in.
  const machines = Array.from({ length: 8000 }, (_, i) => ({
    name: `machine-${i}`,
    site: `site-é${i % 9}`,
    state: 'UP' as const,
    lastHeardAt: new Date(1_700_000_000_000 + i).toISOString(),
    modules: ['broker', `m${i}`],
    holdings: [{ seat: `seat-${i}`, module: 'broker', derived: false }],
  }));
  const big: Composition = { ...latest(), seq: 10_000_000, machines };
  expect(Buffer.byteLength(JSON.stringify(big))).toBeGreaterThan(1024 * 1024);
  const parts = await encodeComposition(big, 32 * 1024);
  expect(parts.length).toBeGreaterThan(1);
  const assemble = compositionAssembler();
  let whole: Composition | undefined;
  for (const part of parts) whole = await assemble({ data: part.data, headers: part.headers });
  expect(whole).toEqual(big);
});

test('on the status subject a composition that fits is one plain JSON message without headers; a larger one goes in gzipped parts framed by seq and i/n', async () => {
  const small = latest();
  const [one, ...more] = await encodeComposition(small, 1024 * 1024);
  expect(more).toEqual([]);
  expect(one.headers).toBeUndefined();
  expect(JSON.parse(Buffer.from(one.data).toString('utf8'))).toEqual(small);
  const machines = Array.from({ length: 3000 }, (_, i) => ({ ...small.machines[0], name: `wire-${i}-${randomUUID()}`, site: randomUUID(), holdings: [] }));
  const parts = await encodeComposition({ ...small, machines }, 32 * 1024);
  expect(parts.length).toBeGreaterThan(1);
  parts.forEach((part, i) => {
    expect(part.headers?.get('Mesh-Status-Seq')).toBe(String(small.seq));
    expect(part.headers?.get('Mesh-Status-Part')).toBe(`${i + 1}/${parts.length}`);
    expect(part.headers?.get('Content-Encoding')).toBe('gzip');
    expect(part.headers?.has('Mesh-Status-Kind')).toBe(false);
  });
});

test('status answers at once, with the last composition, while a composition of a large mesh is under way', async () => {
  // 10,000 machines, each running two modules, one claiming a seat.
  await sql`insert into machine (name, site, first_heard_at, last_heard_at, heartbeats)
              select 'big-' || i, 'site-' || (i % 20), now(), now(), 1 from generate_series(1, 10000) i`.execute(gw.mesh.db);
  await sql`insert into assignment (machine, module, running, claims)
              select 'big-' || i, m, true, case when m = 'broker' then '["queue"]'::jsonb else '[]'::jsonb end
                from generate_series(1, 10000) i, unnest(array['broker', 'web']) m`.execute(gw.mesh.db);
  await eventually(() => !gw.composer.composing(), 'no composition in flight');
  const before = latest().seq;
  // Hold the composition in flight: it waits on the machine table until we let go.
  const blocker = new pg.Client({ connectionString: env.database.url });
  await blocker.connect();
  try {
    await blocker.query('begin');
    await blocker.query('lock table machine in access exclusive mode');
    gw.composer.request('asked');
    await eventually(() => gw.composer.composing(), 'a composition under way');
    const { data } = await gw.gql('{ status { seq } }');
    expect(data.status.seq).toBe(before);
    expect(gw.composer.composing()).toBe(true);
  } finally {
    await blocker.query('rollback');
    await blocker.end();
  }
  await eventually(() => latest().seq > before && latest().machines.length > 10_000, 'the large composition', 20_000);
  const { data } = await gw.gql('{ status { seq machines { name } } }');
  expect(data.status.seq).toBe(latest().seq);
  expect(data.status.machines.length).toBeGreaterThan(10_000);
});

import { afterAll, beforeAll, expect, test } from 'vitest';
import { ingestBatch } from '../../../src/services/news/batch.js';
import { judgeNews } from '../../../src/services/news/wire.js';
import { useGateway } from '../../fixtures/gateway.js';
import { anAgent, eventually } from '../../fixtures/live.js';
import { logInto } from '../../fixtures/log.js';
import { newsDrained } from '../../fixtures/news.js';
import { startTestGateway, type TestGateway } from '../../fixtures/services.js';

// A gateway of our own, so its log can be read.
const { gw, env } = useGateway('news', { logger: () => logInto(logged, 'warn') });
let agent: Awaited<ReturnType<typeof anAgent>>;
const logged: Record<string, unknown>[] = [];

beforeAll(async () => {
  agent = await anAgent();
});
afterAll(async () => {
  await agent?.close();
});

const root = () => env.subjects;
const db = () => gw.mesh.db;
const machineRow = (name: string) => db().selectFrom('machine').selectAll().where('name', '=', name).executeTakeFirst();
const durationsOf = (kind: 'heartbeat_gap' | 'build', subject: string) =>
  db().selectFrom('duration').select(['seconds', 'heard_at']).where('kind', '=', kind).where('subject', '=', subject).execute();

test('a heartbeat creates its machine and its assignments, with what each module claims', async () => {
  agent.heartbeat(root(), 'edge-1', { site: 'eu-1', modules: ['broker', 'builder'], claims: { broker: ['queue'] } });
  const machine = await eventually(() => machineRow('edge-1'), 'the machine to be written');
  expect(machine).toMatchObject({ name: 'edge-1', site: 'eu-1', heartbeats: 1 });
  const assignments = await db().selectFrom('assignment').select(['module', 'running', 'claims']).where('machine', '=', 'edge-1').orderBy('module').execute();
  expect(assignments).toEqual([
    { module: 'broker', running: true, claims: ['queue'] },
    { module: 'builder', running: true, claims: [] },
  ]);

  agent.heartbeat(root(), 'edge-1', { site: 'eu-1', modules: ['broker'] });
  await eventually(async () => Number((await machineRow('edge-1'))?.heartbeats) === 2, 'the second heartbeat');
  const after = await db().selectFrom('assignment').select(['module', 'running']).where('machine', '=', 'edge-1').orderBy('module').execute();
  expect(after).toEqual([
    { module: 'broker', running: true },
    { module: 'builder', running: false },
  ]);
});

test('a late heartbeat records the gap since the one before, as heard; a timely one records nothing', async () => {
  const now = Date.now();
  // MESH_HEARTBEAT_S defaults to 10: a gap over 15 s is late. Beats as the stream stored them (heard
  // then), whatever the agent's clock says: the gap is the gateway's hearing, not the agent's dating.
  const heardAt = (machine: string, at: number) => {
    const news = judgeNews(
      root(),
      `${root()}.news.machine.${machine}`,
      JSON.stringify({ kind: 'heartbeat', site: 'eu-1', modules: ['broker'], at: new Date(0).toISOString() }),
      new Date(at),
    );
    if (news.type === 'malformed') throw new Error(news.reason);
    return news;
  };
  await ingestBatch(gw.mesh, [heardAt('late-1', now - 100_000)]);
  await ingestBatch(gw.mesh, [heardAt('late-1', now - 60_000)]);
  await ingestBatch(gw.mesh, [heardAt('late-1', now - 52_000)]);
  // Beats that change nothing stored are counted at the checkpoint (issue 37): flushed here.
  await gw.news.flush();
  expect(Number((await machineRow('late-1'))?.heartbeats)).toBe(3);
  const gaps = await durationsOf('heartbeat_gap', 'late-1');
  expect(gaps.map((g) => g.seconds)).toEqual([40]);
  expect(new Date(gaps[0]!.heard_at).getTime()).toBe(now - 60_000);
});

test("a build's duration runs from its start to its first finish or failure", async () => {
  const t0 = Date.now() - 120_000;
  const ingested = gw.news.stats.ingested;
  agent.build(root(), 'b-100', { kind: 'started', module: 'broker', at: new Date(t0).toISOString() });
  await eventually(() => db().selectFrom('build').selectAll().where('name', '=', 'b-100').executeTakeFirst(), 'the build start');
  agent.build(root(), 'b-100', { kind: 'finished', at: new Date(t0 + 42_500).toISOString() });
  agent.build(root(), 'b-101', { kind: 'started', at: new Date(t0).toISOString() });
  agent.build(root(), 'b-101', { kind: 'failed', at: new Date(t0 + 7_000).toISOString() });
  agent.build(root(), 'b-101', { kind: 'failed', at: new Date(t0 + 9_000).toISOString() });
  await eventually(async () => (await durationsOf('build', 'b-101')).length === 1, 'the failed build');
  await eventually(async () => (await durationsOf('build', 'b-100')).length === 1, 'the finished build');
  expect((await durationsOf('build', 'b-100'))[0]!.seconds).toBe(42.5);
  await eventually(() => gw.news.stats.ingested >= ingested + 5, 'all five build news written');
  // The repeated failure is not a second duration.
  expect((await durationsOf('build', 'b-101')).map((d) => d.seconds)).toEqual([7]);
  const builds = await db().selectFrom('build').select(['name', 'state', 'module']).where('name', 'in', ['b-100', 'b-101']).orderBy('name').execute();
  expect(builds).toEqual([
    { name: 'b-100', state: 'finished', module: 'broker' },
    { name: 'b-101', state: 'failed', module: null },
  ]);
});

test('a malformed message is counted and logged with its subject, changes nothing, and the ingest goes on', async () => {
  const before = { ...gw.news.stats };
  const machines = await db().selectFrom('machine').select('name').execute();
  const bad: [string, string][] = [
    [`${root()}.news.machine.bad-1`, 'not json {'],
    [`${root()}.news.machine.bad-2`, JSON.stringify({ kind: 'heartbeat', site: 'eu-1' })],
    [`${root()}.news.machine.bad-3`, JSON.stringify({ kind: 'heartbeat', modules: ['has space'] })],
    [`${root()}.news.machine.bad-4`, JSON.stringify({ kind: 'gossip' })],
    [`${root()}.news.machine.bad-5`, JSON.stringify({ kind: 'report', plan: 'p', build: 'b', ok: 'yes' })],
    [`${root()}.news.machine.bad@6`, JSON.stringify({ kind: 'heartbeat', modules: [] })],
    [`${root()}.news.build.b-bad`, JSON.stringify({ kind: 'exploded' })],
    [`${root()}.news.machine.bad-7`, JSON.stringify({ kind: 'heartbeat', modules: ['x'], at: 'yesterday' })],
    [`${root()}.news.machine.bad-8`, JSON.stringify([1, 2, 3])],
  ];
  for (const [subject, body] of bad) agent.nc.publish(subject, body);
  agent.heartbeat(root(), 'after-bad', { modules: ['broker'] });
  await eventually(() => machineRow('after-bad'), 'the good message after the bad ones');
  expect(gw.news.stats.malformed - before.malformed).toBe(bad.length);
  const afterMachines = await db().selectFrom('machine').select('name').execute();
  expect(afterMachines.map((m) => m.name).sort()).toEqual([...machines.map((m) => m.name), 'after-bad'].sort());
  // Logged once per interval with the count and samples (issue 10), not a line per message.
  await gw.news.flush();
  const warnings = logged.filter((l) => l.msg === 'malformed news ignored');
  expect(warnings.reduce((n, w) => n + Number(w.count), 0)).toBe(bad.length);
  const samples = warnings.flatMap((w) => w.samples as { subject: string; reason: string }[]);
  expect(samples[0]?.subject).toBe(bad[0]![0]);
  expect(samples.find((w) => w.subject === `${root()}.news.machine.bad-3`)?.reason).toMatch(/module .*space/);
});

test('news is written by one replica of the queue group, not by each', async () => {
  const second: TestGateway = await startTestGateway(env.env);
  try {
    const before = gw.news.stats.ingested + second.news.stats.ingested;
    for (let i = 0; i < 200; i++) agent.heartbeat(root(), `q-${i}`, { site: 'eu-2', modules: ['broker'] });
    await eventually(() => gw.news.stats.ingested + second.news.stats.ingested - before >= 200, '200 heartbeats written');
    // A second copy of the news, were each replica to get one, is written once the stream is drained.
    await newsDrained(gw.mesh.db, gw.mesh.bus.jsm, env.controller);
    expect(gw.news.stats.ingested + second.news.stats.ingested - before).toBe(200);
    const counts = await db().selectFrom('machine').select(['heartbeats']).where('name', 'like', 'q-%').execute();
    expect(counts).toHaveLength(200);
    expect(counts.every((c) => Number(c.heartbeats) === 1)).toBe(true);
  } finally {
    await second.stop();
  }
});

import { sql } from 'kysely';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { judgeNews } from '../../../src/services/news/wire.js';
import { useGateway } from '../../fixtures/gateway.js';
import { anAgent, eventually } from '../../fixtures/live.js';
import { logInto } from '../../fixtures/log.js';
import { heartbeatsOf } from '../../fixtures/news.js';

const { gw, env } = useGateway('poison', { logger: () => logInto(logged, 'warn') });
let agent: Awaited<ReturnType<typeof anAgent>>;
const logged: Record<string, unknown>[] = [];

beforeAll(async () => {
  agent = await anAgent();
});
afterAll(async () => {
  await agent?.close();
});

const heartbeatCounts = async (prefix: string) => Object.values(await heartbeatsOf(gw.mesh.db, prefix));

test('what the store cannot keep is refused at the wire: an `at` in year 0000, a NUL in a report detail', () => {
  const heard = new Date();
  const zero = judgeNews('r', 'r.news.machine.m1', JSON.stringify({ kind: 'heartbeat', modules: [], at: '0000-01-01T00:00:00Z' }), heard);
  expect(zero).toMatchObject({ type: 'malformed', reason: expect.stringContaining('0001-01-01') });
  const offset = judgeNews('r', 'r.news.machine.m1', JSON.stringify({ kind: 'heartbeat', modules: [], at: '0001-01-01T00:30:00+01:00' }), heard);
  expect(offset.type).toBe('malformed');
  const first = judgeNews('r', 'r.news.machine.m1', JSON.stringify({ kind: 'heartbeat', modules: [], at: '0001-01-01T00:00:00Z' }), heard);
  expect(first.type).toBe('heartbeat');
  const nul = judgeNews('r', 'r.news.machine.m1', JSON.stringify({ kind: 'report', plan: 'p', build: 'b', ok: false, detail: 'bad\u0000byte' }), heard);
  expect(nul).toMatchObject({ type: 'malformed', reason: expect.stringContaining('NUL') });
});

test('heartbeats in year 0000 among 5,000 good ones: every good one is written', async () => {
  const before = gw.news.stats.malformed;
  for (let i = 0; i < 5_000; i++) {
    agent.heartbeat(env.subjects, `z-${i}`, { modules: ['broker'] });
    if (i % 1_000 === 500) agent.heartbeat(env.subjects, `zz-${i}`, { modules: ['broker'], at: '0000-01-01T00:00:00Z' });
  }
  await agent.nc.flush();
  await eventually(async () => (await heartbeatCounts('z-')).length === 5_000, 'the 5,000 good heartbeats', 30_000, 100);
  expect(gw.news.stats.malformed - before).toBe(5);
});

test('a batch the store refuses is split until the one message it refuses is found: all the others are written, that one is counted and logged with its subject', async () => {
  // A refusal the wire cannot foresee: this test's own database refuses one machine's name.
  await sql`alter table machine add constraint refuses_poison check (name <> 'poison-1')`.execute(gw.mesh.db);
  const before = { ...gw.news.stats };
  for (let i = 0; i < 2_000; i++) {
    agent.heartbeat(env.subjects, `g-${i}`, { modules: ['broker'] });
    if (i === 1_234) agent.heartbeat(env.subjects, 'poison-1', { modules: ['broker'] });
  }
  await agent.nc.flush();
  await eventually(() => gw.news.stats.poison - before.poison === 1, 'the poison message found', 30_000, 50);
  // Messages past the poison may still be on their way from NATS when it is found: a flush alone
  // wrote what had come (1,985 of 2,000, once, on Node 22 in CI).
  await eventually(async () => (await heartbeatCounts('g-')).length === 2_000, 'the 2,000 good heartbeats', 30_000, 100);
  const counts = await heartbeatCounts('g-');
  expect(counts).toHaveLength(2_000);
  expect(counts.every((n) => n === 1)).toBe(true);
  expect(await heartbeatCounts('poison-')).toEqual([]);
  const refused = logged.filter((l) => l.msg === 'news the store refuses was dropped');
  expect(refused).toHaveLength(1);
  expect(refused[0]).toMatchObject({ subject: `${env.subjects}.news.machine.poison-1`, err: expect.stringContaining('refuses_poison') });
}, 60_000);

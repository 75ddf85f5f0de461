import { afterAll, beforeAll, expect, test } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { type Duration, pruneDurations, recordDurations, summarise } from '../../../src/services/durations/durations.js';
import { freshStore, startTestGateway, type TestEnv, type TestGateway, testEnv } from '../../fixtures/services.js';

let store: Awaited<ReturnType<typeof freshStore>>;
/** The instant the observations are heard relative to: windows are taken from it, not from the clock when a test runs. */
let recordedAt: number;
const config = loadConfig({ MESH_HEARTBEAT_S: '10', MESH_APPLY_TIMEOUT_S: '90', MESH_TIER_TIMEOUT_S: '600', MESH_BUILD_TIMEOUT_S: '1200' });

beforeAll(async () => {
  store = await freshStore('durations');
  const now = Date.now();
  recordedAt = now;
  const rows: Duration[] = [];
  for (let i = 1; i <= 100; i++) rows.push({ kind: 'apply', subject: `p/m${i}`, seconds: i, heardAt: new Date(now - i * 1000) });
  rows.push({ kind: 'heartbeat_gap', subject: 'm1', seconds: 20, heardAt: new Date(now) });
  rows.push({ kind: 'heartbeat_gap', subject: 'm2', seconds: 70, heardAt: new Date(now) });
  await recordDurations(store.db, rows);
});
afterAll(async () => {
  await store?.close();
});

test('a summary gives count, min, mean, p50, p90, p99 and max in seconds, with one SQL statement', async () => {
  store.statements.reset();
  const [apply] = await summarise(store.db, config, 'apply');
  expect(store.statements.count).toBe(1);
  expect(apply).toMatchObject({ kind: 'apply', count: 100, min: 1, max: 100, mean: 50.5, bound: 90, exceeded: 10 });
  expect(apply!.p50).toBeCloseTo(50.5, 9);
  expect(apply!.p90).toBeCloseTo(90.1, 9);
  expect(apply!.p99).toBeCloseTo(99.01, 9);
});

test('every kind is listed, with the bound in force for it, also where nothing was heard', async () => {
  store.statements.reset();
  const all = await summarise(store.db, config);
  expect(store.statements.count).toBe(1);
  expect(all.map((s) => [s.kind, s.count, s.bound, s.exceeded])).toEqual([
    ['apply', 100, 90, 10],
    ['build', 0, 1200, 0],
    // A gap is late past 1.5 heartbeat intervals: the lateness is the bound.
    ['heartbeat_gap', 2, 15, 2],
    ['plan_tier', 0, 600, 0],
  ]);
  expect(all.find((s) => s.kind === 'build')).toMatchObject({ min: null, mean: null, p50: null, p99: null, max: null });
});

test('a window counts only what was heard since its start', async () => {
  const [apply] = await summarise(store.db, config, 'apply', new Date(recordedAt - 10_500));
  expect(apply).toMatchObject({ count: 10, min: 1, max: 10 });
});

test('observations past the retention are pruned, the rest kept', async () => {
  const day = 86_400_000;
  const now = Date.now();
  await recordDurations(store.db, [
    { kind: 'build', subject: 'old-1', seconds: 3, heardAt: new Date(now - 20 * day) },
    { kind: 'build', subject: 'old-2', seconds: 4, heardAt: new Date(now - 15 * day) },
    { kind: 'build', subject: 'recent', seconds: 5, heardAt: new Date(now - 13 * day) },
  ]);
  expect(await pruneDurations(store.db, 14)).toBe(2);
  const left = await store.db.selectFrom('duration').select('subject').where('kind', '=', 'build').execute();
  expect(left.map((r) => r.subject)).toEqual(['recent']);
});

test('durations(kind, since) answers over GraphQL with the fixed names', async () => {
  const env: TestEnv = await testEnv('durations_gql');
  const gw: TestGateway = await startTestGateway({ ...env.env, MESH_BUILD_TIMEOUT_S: '5' });
  try {
    await recordDurations(gw.mesh.db, [
      { kind: 'build', subject: 'b1', seconds: 2, heardAt: new Date() },
      { kind: 'build', subject: 'b2', seconds: 8, heardAt: new Date() },
    ]);
    const { data, errors } = await gw.gql(
      `query($since: DateTime) { durations(kind: BUILD, since: $since) { kind count min mean p50 p90 p99 max bound exceeded } }`,
      {
        since: new Date(Date.now() - 60_000).toISOString(),
      },
    );
    expect(errors).toBeUndefined();
    expect(data.durations).toEqual([
      { kind: 'BUILD', count: 2, min: 2, mean: 5, p50: 5, p90: expect.closeTo(7.4, 9), p99: expect.closeTo(7.94, 9), max: 8, bound: 5, exceeded: 1 },
    ]);
    const all = await gw.gql('{ durations { kind count } }');
    expect(all.data.durations.map((d: { kind: string }) => d.kind)).toEqual(['APPLY', 'BUILD', 'HEARTBEAT_GAP', 'PLAN_TIER']);
  } finally {
    await gw.stop();
    await env.cleanup();
  }
});

import { afterAll, beforeAll, expect, test } from 'vitest';
import { statusStreamName } from '../../../src/bus/status-stream.js';
import { STATUS_COUNTS_GRAIN_MS, STATUS_COUNTS_POINTS_MAX, StatusCountSeries, startStatusCounts } from '../../../src/services/status/looking-back/counts.js';
import { useGateway } from '../../fixtures/gateway.js';
import { anAgent, eventually } from '../../fixtures/live.js';
import { startTestGateway, type TestGateway } from '../../fixtures/services.js';

const T0 = Date.parse('2026-12-01T03:00:00Z');
const at = (ms: number) => new Date(T0 + ms);

test('each point is the composition in force at its instant, none before the first kept', () => {
  const series = new StatusCountSeries(24 * 3600_000);
  series.record(T0 + 60_000, { up: 10, late: 0, silent: 0 });
  series.record(T0 + 180_000, { up: 7, late: 3, silent: 0 });
  series.record(T0 + 300_000, { up: 6, late: 1, silent: 3 });
  const points = series.query({ since: at(0), until: at(360_000), stepSeconds: 60 }, at(400_000));
  expect(points).toEqual([
    { at: at(60_000).toISOString(), up: 10, late: 0, silent: 0 },
    { at: at(120_000).toISOString(), up: 10, late: 0, silent: 0 },
    { at: at(180_000).toISOString(), up: 7, late: 3, silent: 0 },
    { at: at(240_000).toISOString(), up: 7, late: 3, silent: 0 },
    { at: at(300_000).toISOString(), up: 6, late: 1, silent: 3 },
    { at: at(360_000).toISOString(), up: 6, late: 1, silent: 3 },
  ]);
});

test('counts are kept as changes, at most two points a grain (its first change and its latest); what is older than the history leaves', () => {
  const series = new StatusCountSeries(3600_000);
  for (let i = 0; i < 1000; i++) series.record(T0 + i * 100, { up: i, late: 0, silent: 0 });
  expect(series.size).toBe(2 * Math.ceil((1000 * 100) / STATUS_COUNTS_GRAIN_MS));
  for (let i = 0; i < 100; i++) series.record(T0 + 100_000 + i * STATUS_COUNTS_GRAIN_MS, { up: 999, late: 0, silent: 0 });
  expect(series.size).toBe(2 * Math.ceil((1000 * 100) / STATUS_COUNTS_GRAIN_MS));
  series.record(T0 + 2 * 3600_000, { up: 1, late: 1, silent: 1 });
  expect(series.size).toBe(1);
});

test('a window of more points than allowed is refused, naming the least step that fits', () => {
  const series = new StatusCountSeries(7 * 24 * 3600_000);
  series.record(T0, { up: 1, late: 0, silent: 0 });
  expect(() => series.query({ since: at(0), until: at(24 * 3600_000), stepSeconds: 1 }, at(24 * 3600_000))).toThrow(
    new RegExp(`at most ${STATUS_COUNTS_POINTS_MAX}: a stepSeconds of 44 or more`),
  );
  expect(series.query({ since: at(0), until: at(24 * 3600_000), stepSeconds: 60 }, at(24 * 3600_000))).toHaveLength(1441);
  expect(series.query({ since: at(0), until: at(24 * 3600_000) }, at(24 * 3600_000)).length).toBeLessThanOrEqual(241);
  expect(() => series.query({ since: at(10), until: at(0) }, at(20))).toThrow(/since is after until/);
  expect(() => series.query({ stepSeconds: 0 })).toThrow(/stepSeconds/);
});

const { gw: a, env } = useGateway('status_counts');
let b: TestGateway | undefined;
let agent: Awaited<ReturnType<typeof anAgent>>;

beforeAll(async () => {
  agent = await anAgent();
});
afterAll(async () => {
  await b?.stop();
  await agent?.close();
});

const COUNTS = 'query($since: DateTime, $step: Int) { statusCounts(since: $since, stepSeconds: $step) { at up late silent } }';

test('statusCounts counts the machines of the compositions, and a replica started later reads the earlier ones back from the stream', async () => {
  const since = new Date(Date.now() - 60_000).toISOString();
  const empty = await eventually(() => a.mesh.status.current(), 'the first composition', 20_000);
  // A second or more with no machine, so that a point falls there.
  await eventually(() => (Date.now() > Date.parse(empty.composedAt) + 1500 ? true : undefined), 'a moment of the empty mesh');
  for (const name of ['sc-1', 'sc-2', 'sc-3']) agent.heartbeat(env.subjects, name, { site: 'eu-1', modules: ['agent'] });
  const three = await eventually(
    () => (a.mesh.status.current()?.machines.length === 3 ? a.mesh.status.current() : undefined),
    'three machines composed',
    20_000,
  );
  const { data, errors } = await a.gql(COUNTS, { since, step: 1 });
  expect(errors).toBeUndefined();
  expect(data.statusCounts.at(-1)).toMatchObject({ up: 3, late: 0, silent: 0 });
  expect(data.statusCounts.some((p: any) => p.up === 0 && Date.parse(p.at) < Date.parse(three.composedAt))).toBe(true);

  b = await startTestGateway(env.env);
  // The replica started after the machines came: the empty mesh before them is the stream's, read back.
  const before = await eventually(
    async () => {
      const r = await b!.gql(COUNTS, { since, step: 1 });
      const early = r.data?.statusCounts.filter((p: any) => Date.parse(p.at) < Date.parse(three.composedAt) && p.up === 0);
      return early?.length ? r.data.statusCounts : undefined;
    },
    'the counts from before the replica started',
    20_000,
  );
  expect(before.at(-1)).toMatchObject({ up: 3, late: 0, silent: 0 });
});

test('the counts are read back from the stream messages’ headers alone, without a composition heard', async () => {
  const silentFeed = { current: () => undefined, subscribe: () => () => undefined };
  const counts = startStatusCounts(silentFeed, { js: a.mesh.bus.js, stream: statusStreamName(env.controller) }, 24 * 3600_000);
  await counts.backfilled;
  counts.stop();
  const points = counts.series.query({ since: new Date(Date.now() - 600_000), stepSeconds: 1 });
  expect(points.some((p) => p.up === 0)).toBe(true);
  expect(points.at(-1)).toMatchObject({ up: 3, late: 0, silent: 0 });
});

test('statusCounts refuses a step that asks too many points as INVALID', async () => {
  const r = await a.gql('query($since: DateTime) { statusCounts(since: $since, stepSeconds: 1) { at } }', {
    since: new Date(Date.now() - 24 * 3600_000).toISOString(),
  });
  expect(r.errors?.[0]).toMatchObject({ extensions: { code: 'INVALID' } });
  expect(r.errors?.[0].message).toMatch(/stepSeconds of 44 or more/);
});

import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { newsStreamName } from '../../../src/bus/news-stream.js';
import { useGateway } from '../../fixtures/gateway.js';
import { anAgent, eventually } from '../../fixtures/live.js';
import { newsDrained, heartbeatsOf as storedHeartbeats } from '../../fixtures/news.js';
import { type PrivatePostgres, startPrivatePostgres } from '../../fixtures/postgres.js';

// A PostgreSQL of this file's own, stopped and started by the test; the shared one is never touched.
let pg: PrivatePostgres;
beforeAll(async () => {
  pg = await startPrivatePostgres();
}, 60_000);
afterAll(() => pg?.remove());
const { gw, env } = useGateway('newsout', { env: () => ({ DATABASE_URL: pg.url }) });
let agent: Awaited<ReturnType<typeof anAgent>>;
beforeAll(async () => {
  agent = await anAgent();
});
afterAll(async () => {
  await agent?.close();
  pg?.start(); // so the gateway's stop can write what it holds
});

const heartbeatsOf = (prefix: string) => storedHeartbeats(gw.mesh.db, prefix);

test('heartbeats sent while the store is stopped are all stored once it is back, each exactly once', async () => {
  agent.heartbeat(env.subjects, 'warm-1', { modules: ['broker'] });
  await eventually(async () => (await heartbeatsOf('warm-1'))['warm-1'] === 1, 'the first heartbeat');
  const receivedBefore = gw.news.stats.received;

  pg.stop();
  const MACHINES = 50;
  const BEATS = 10;
  for (let beat = 0; beat < BEATS; beat++) for (let m = 0; m < MACHINES; m++) agent.heartbeat(env.subjects, `o-${m}`, { modules: ['broker'] });
  await agent.nc.flush();
  // They are kept by the bus meanwhile, not lost.
  const jsm = await jetstreamManager(agent.nc);
  await eventually(async () => (await jsm.streams.info(newsStreamName(env.controller))).state.messages >= MACHINES * BEATS + 1, 'the stream to hold them');
  // Long enough for the ingest to try, be refused and hand them back at least once.
  await eventually(() => gw.news.stats.redelivered > 0, 'a batch dropped while the store is away, to be read again');
  expect(await gw.gql(`{ machines { name } }`)).toMatchObject({ errors: [{ extensions: { code: 'UNAVAILABLE' } }] });

  pg.start();
  const expected = Object.fromEntries(Array.from({ length: MACHINES }, (_, m) => [`o-${m}`, BEATS]));
  await eventually(
    async () => {
      const got = await heartbeatsOf('o-').catch(() => ({}));
      return Object.keys(got).length === MACHINES && Object.values(got).every((n) => n >= BEATS) ? got : undefined;
    },
    'every heartbeat stored',
    30_000,
    200,
  );
  // Every message the stream holds is written and acknowledged: a copy written twice would show now.
  await newsDrained(gw.mesh.db, gw.mesh.bus.jsm, env.controller);
  expect(await heartbeatsOf('o-')).toEqual(expected);
  // Each message is counted received once (/metrics' mesh_news_received_total), however often it was read again.
  expect(gw.news.stats.received - receivedBefore).toBe(MACHINES * BEATS);
}, 90_000);

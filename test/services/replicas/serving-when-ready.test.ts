import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type Buckets, ensureBuckets } from '../../../src/bus/buckets.js';
import { startCallView } from '../../../src/services/calls/records.js';
import { startHandActView } from '../../../src/services/hand-acts/hand-acts.js';
import { LEASE_REFRESH_MS, LEASE_TTL_MS, type Leases, readServingHolder, startLeases } from '../../../src/services/replicas/leases.js';
import { openStore, type Store } from '../../../src/store/db.js';
import { NATS_URL, type TestEnv, testEnv } from '../../fixtures/services.js';

// Seen in `bench badday` at 100,000 machines: the serving replica SIGKILLed, its replacement started
// and took the serving lease at its start, then re-read the news for seconds (tens, before) before
// it composed, while the survivor, able to compose at once, was left standing by. A replica now
// contends to serve only once it can compose (`mayServe`, called by the gateway then).

const logger = pino({ level: 'silent' });
let env: TestEnv;
let nc: NatsConnection;
let buckets: Buckets;
let db: Store;
const started: Leases[] = [];
beforeAll(async () => {
  env = await testEnv('serving_ready');
  nc = await connect({ servers: NATS_URL });
  buckets = await ensureBuckets(nc, await jetstreamManager(nc), env.controller, logger);
  db = await openStore({ databaseUrl: env.database.url, dataDir: '.mesh' });
});
afterAll(async () => {
  for (const leases of started) await leases.stop().catch(() => undefined);
  await nc?.close();
  await db?.destroy();
  await env?.cleanup();
});

async function aReplica(replica: string): Promise<Leases> {
  const jsm = await jetstreamManager(nc);
  const views = { calls: await startCallView(buckets, jsm, logger), handActs: await startHandActView(buckets, jsm, logger) };
  const leases = await startLeases({ db, buckets, views, config: { replica }, logger }, jsm);
  started.push(leases);
  return leases;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('a replica that cannot compose yet leaves the serving lease to one that can, even when the lease is free', async () => {
  const starting = await aReplica('still-reading');
  await sleep(LEASE_TTL_MS / 2 + LEASE_REFRESH_MS);
  expect(starting.isServing()).toBe(false);
  expect(await readServingHolder({ buckets })).toBeUndefined();

  const ready = await aReplica('ready');
  await ready.mayServe();
  expect(ready.isServing()).toBe(true);
  expect((await readServingHolder({ buckets }))?.replica).toBe('ready');

  // The one that can serve goes away: the lease, free again after its TTL, goes to a replica once it can compose.
  await ready.stop();
  started.splice(started.indexOf(ready), 1);
  await sleep(LEASE_TTL_MS + LEASE_REFRESH_MS);
  expect(starting.isServing()).toBe(false);
  await starting.mayServe();
  expect(starting.isServing()).toBe(true);
}, 30_000);

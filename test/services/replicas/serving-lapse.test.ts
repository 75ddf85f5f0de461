import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type Buckets, ensureBuckets } from '../../../src/bus/buckets.js';
import { startCallView } from '../../../src/services/calls/records.js';
import { startHandActView } from '../../../src/services/hand-acts/hand-acts.js';
import { type Leases, readServingHolder, SERVING_TRUSTED_MS, startLeases } from '../../../src/services/replicas/leases.js';
import { openStore, type Store } from '../../../src/store/db.js';
import { NATS_URL, type TestEnv, testEnv } from '../../fixtures/services.js';

// Seen in `bench million` on a loaded machine: the serving replica's event loop stood still a
// little past its trust in the lease (2 s and more), it stopped composing, took the lease back in
// the next round (16–400 ms later, no other replica having taken it) and began a whole composition
// of the mesh again, which the next stall cut short: no composition for 13 minutes. The lease taken
// back in the term it lapsed in is told as resumed, and the composer goes on from its view.

const logger = pino({ level: 'silent' });
let env: TestEnv;
let nc: NatsConnection;
let buckets: Buckets;
let db: Store;
let leases: Leases | undefined;
beforeAll(async () => {
  env = await testEnv('serving_lapse');
  nc = await connect({ servers: NATS_URL });
  buckets = await ensureBuckets(nc, await jetstreamManager(nc), env.controller, logger);
  db = await openStore({ databaseUrl: env.database.url, dataDir: '.mesh' });
});
afterAll(async () => {
  await leases?.stop().catch(() => undefined);
  await nc?.close();
  await db?.destroy();
  await env?.cleanup();
});

test('a serving replica whose event loop stood still past its trust, no other replica taking the lease, takes it back in the same term, told as resumed', async () => {
  const jsm = await jetstreamManager(nc);
  const views = { calls: await startCallView(buckets, jsm, logger), handActs: await startHandActView(buckets, jsm, logger) };
  leases = await startLeases({ db, buckets, views, config: { replica: 'stalled' }, logger }, jsm);
  await leases.mayServe();
  expect(leases.isServing()).toBe(true);
  const term = (await readServingHolder({ buckets }))?.term;
  const told: [boolean, boolean][] = [];
  leases.onServingChange((serving, resumed) => told.push([serving, resumed]));

  // The event loop stands still past the trust (a stall of the replica's own), shorter than would let another take the lease.
  const until = performance.now() + SERVING_TRUSTED_MS + 300;
  while (performance.now() < until);

  await expect
    .poll(() => told, { timeout: 5_000 })
    .toEqual([
      [false, false],
      [true, true],
    ]);
  expect(leases.isServing()).toBe(true);
  expect(await readServingHolder({ buckets })).toEqual({ replica: 'stalled', term });
});

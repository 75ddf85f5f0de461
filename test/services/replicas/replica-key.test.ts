import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { REPLICA_KEY_GRACE_MS, type ReplicaKeys, rotateReplicaKey, startReplicaKeys } from '../../../src/services/access/replica-key.js';
import { acquireServing, readServingHolder, SERVING_KEY } from '../../../src/services/replicas/leases.js';
import { freshStore, NATS_URL, uniqueName } from '../../fixtures/services.js';

// The replicas' shared key (issue 34, item 4; issue 35 proves forwarded callers with it): made once
// per store, rotated with the new key announced before it signs, the key before valid for a grace.

const logger = pino({ level: 'silent' });
let store: Awaited<ReturnType<typeof freshStore>>;
let nc: NatsConnection;
const started: ReplicaKeys[] = [];
const start = async () => {
  const keys = await startReplicaKeys(store.db, logger);
  started.push(keys);
  return keys;
};
const bytes = (s: string) => [Buffer.from(s)];

beforeAll(async () => {
  store = await freshStore('replica_key');
  nc = await connect({ servers: NATS_URL });
});
afterAll(async () => {
  for (const k of started) k.stop();
  await store?.close();
  await nc?.close();
});

test('replicas starting together on one store share one key, made by the first', async () => {
  const [a, b, c] = await Promise.all([start(), start(), start()]);
  expect(new Set([a, b, c].map((k) => k.current().secret.toString('hex'))).size).toBe(1);
  const { keyId, mac } = a.sign(bytes('composition 7'));
  expect(await b.verify(keyId, mac, bytes('composition 7'))).toBe(true);
  expect(await b.verify(keyId, mac, bytes('composition 8'))).toBe(false);
  expect(await b.verify(keyId, mac.subarray(0, 16), bytes('composition 7'))).toBe(false);
  expect(await b.verify(keyId + 40, mac, bytes('composition 7'))).toBe(false);
});

test('a rotated key signs once active; a replica that has not read it reads it on the first message sealed with it; the key before is refused past its grace', async () => {
  const a = await start();
  const b = await start();
  const before = a.current().id;
  const next = await rotateReplicaKey(store.db, 0);
  await a.reload();
  const signed = a.sign(bytes('after the rotation'));
  expect(signed.keyId).toBe(next);
  // b has not read the store since: it reads it on the first message sealed with a key newer than it knows.
  expect(await b.verify(signed.keyId, signed.mac, bytes('after the rotation'))).toBe(false);
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  await b.verify(signed.keyId, signed.mac, bytes('after the rotation'));
  await b.reload();
  expect(await b.verify(signed.keyId, signed.mac, bytes('after the rotation'))).toBe(true);
  // The key before: valid in its grace, refused after it.
  const behind = await start();
  await sql`update replica_key set active_at = now() + interval '1 hour' where id = ${next}`.execute(store.db);
  await behind.reload();
  expect(behind.current().id).toBe(before);
  const sealedBefore = behind.sign(bytes('sealed with the key before'));
  await sql`update replica_key set active_at = now() - interval '1 second' where id = ${next}`.execute(store.db);
  await b.reload();
  expect(await b.verify(sealedBefore.keyId, sealedBefore.mac, bytes('sealed with the key before'))).toBe(true);
  await sql`update replica_key set active_at = now() - make_interval(secs => ${REPLICA_KEY_GRACE_MS / 1000 + 1}) where id = ${next}`.execute(store.db);
  await b.reload();
  expect(await b.verify(sealedBefore.keyId, sealedBefore.mac, bytes('sealed with the key before'))).toBe(false);
});

test('the serving lease carries its term: kept while its holder refreshes, higher at each takeover', async () => {
  const kvm = new Kvm(nc);
  const name = uniqueName('leases_term');
  const leases = await kvm.create(name, { history: 1 });
  try {
    const mesh = (replica: string) => ({ buckets: { leases, names: {} } as never, config: { replica } });
    expect(await acquireServing(mesh('replica-a'))).toBe(true);
    const first = await readServingHolder(mesh('replica-a'));
    expect(first).toEqual({ replica: 'replica-a', term: 0 });
    expect(await acquireServing(mesh('replica-a'))).toBe(true);
    expect(await readServingHolder(mesh('replica-a'))).toEqual(first);
    expect(await acquireServing(mesh('replica-b'))).toBe(false);
    // A's lease expires: B takes over in a higher term.
    const entry = await leases.get(SERVING_KEY);
    await leases.put(SERVING_KEY, JSON.stringify({ ...entry!.json<object>(), expiresAt: new Date(Date.now() - 1_000).toISOString() }));
    expect(await acquireServing(mesh('replica-b'))).toBe(true);
    const second = await readServingHolder(mesh('replica-b'));
    expect(second?.replica).toBe('replica-b');
    expect(second!.term).toBeGreaterThan(first!.term);
  } finally {
    await leases.destroy().catch(() => undefined);
  }
});

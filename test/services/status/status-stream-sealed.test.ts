import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, headers, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { ensureStatusStream, statusStreamName } from '../../../src/bus/status-stream.js';
import { type ReplicaKeys, rotateReplicaKey, startReplicaKeys } from '../../../src/services/access/replica-key.js';
import type { ServingHolder } from '../../../src/services/replicas/leases.js';
import type { Composition } from '../../../src/services/status/composition.js';
import { type RunningStatusFeed, startStatusFeed } from '../../../src/services/status/live/feed.js';
import { compositionAssembler } from '../../../src/services/status/replicating/assemble.js';
import { encodeComposition, encodeStreamEntry } from '../../../src/services/status/replicating/encode.js';
import { type StatusSeal, statusSeal } from '../../../src/services/status/replicating/seal.js';
import type { StatusStreamLink } from '../../../src/services/status/replicating/stream-follower.js';
import { ServingFenced, statusPublisher } from '../../../src/services/status/replicating/stream-publisher.js';
import { STATUS_SEQ_JUMP_MAX, STATUS_UNZIPPED_MAX, StatusRefused } from '../../../src/services/status/replicating/wire.js';
import { aComposition } from '../../fixtures/compositions.js';
import { eventually } from '../../fixtures/live.js';
import { freshStore, NATS_URL, uniqueName } from '../../fixtures/services.js';

// Issue 34, item 4: only the serving replica's compositions are taken. Two replicas' seals over
// one store's key: A serves (publishes through the status stream), B follows it. Whoever else
// puts into the stream or publishes on the subject, with any headers, is ignored and counted.

const logger = pino({ level: 'silent' });
let nc: NatsConnection;
let store: Awaited<ReturnType<typeof freshStore>>;
let root: string;
let link: StatusStreamLink;
let keysA: ReplicaKeys;
let keysB: ReplicaKeys;
/** The serving lease as both replicas hear it. */
let holder: ServingHolder = { replica: 'replica-a', term: 7 };
let termA: number | undefined = 7;
let sealA: StatusSeal;
let sealB: StatusSeal;
let follower: RunningStatusFeed;
let served: Composition | undefined;
let serve: (c: Composition, trigger?: 'start' | 'news') => Promise<void>;

const leasesAs = (term: () => number | undefined) => ({ servingTerm: term, servingHolder: async () => holder });

beforeAll(async () => {
  nc = await connect({ servers: NATS_URL });
  store = await freshStore('sealed');
  keysA = await startReplicaKeys(store.db, logger);
  keysB = await startReplicaKeys(store.db, logger);
  root = uniqueName('mesh_sealed');
  const controller = uniqueName('ctl_sealed');
  const jsm = await jetstreamManager(nc);
  const stream = await ensureStatusStream(jsm, controller, root, { historyHours: 1 });
  sealA = statusSeal({ replica: 'replica-a', keys: keysA, leases: leasesAs(() => termA), logger });
  sealB = statusSeal({ replica: 'replica-b', keys: keysB, leases: leasesAs(() => undefined), logger });
  link = { js: jetstream(nc), jsm, ...stream, askSnapshot: () => undefined };
  follower = startStatusFeed(nc, `${root}.status`, logger, undefined, { ...link, sealing: sealB });
  const publisher = statusPublisher({ nc, js: link.js, subjects: link.subjects, current: () => served, logger, sealing: sealA });
  serve = async (c, trigger = 'news') => {
    // A message put into the stream by anyone fences the next put (it expects the stream to end at
    // its own last): the composer drops that composition and the next one goes in.
    const published = await publisher(c, trigger).catch((error) => (error instanceof ServingFenced ? publisher(c, 'news') : Promise.reject(error)));
    served = published.composition;
  };
});
afterAll(async () => {
  await follower?.stop();
  keysA?.stop();
  keysB?.stop();
  await link?.jsm.streams.delete(link.stream).catch(() => undefined);
  await store?.close();
  await nc?.close();
});

const withMachine = (c: Composition, seq: number, name: string): Composition => ({
  ...c,
  seq,
  machines: [...c.machines, { name, site: 'eu-1', state: 'UP', lastHeardAt: c.composedAt, modules: ['broker'], holdings: [] }],
});
const held = () => follower.current()?.seq ?? 0;
const has = (name: string) => follower.current()?.machines.some((m) => m.name === name) ?? false;
const putRaw = async (subject: string, data: Uint8Array, h?: MsgHdrs) => {
  await link.js.publish(subject, data, h ? { headers: h } : undefined);
};
const framed = (kind: 'snapshot' | 'delta', seq: number) => {
  const h = headers();
  h.set('Mesh-Status-Seq', String(seq));
  h.set('Mesh-Status-Kind', kind);
  return h;
};

test('an honest follow: the serving replica’s sealed snapshot and deltas are taken, every part naming its replica, term and key', async () => {
  let c = aComposition(10, 50);
  await serve(c, 'start');
  for (let seq = 11; seq <= 13; seq++) {
    c = withMachine(c, seq, `honest-${seq}`);
    await serve(c);
  }
  await eventually(() => held() === 13, 'the follower at 13');
  expect(has('honest-13')).toBe(true);
  expect(sealB.refusedTotal()).toBe(0);
  const info = await link.jsm.streams.info(link.stream);
  const last = await link.jsm.streams.getMessage(statusStreamName(link.stream.replace(/_status$/, '')), { seq: info.state.last_seq });
  expect(last?.header.get('Mesh-Status-Replica')).toBe('replica-a');
  expect(last?.header.get('Mesh-Status-Term')).toBe('7');
  expect(last?.header.get('Mesh-Status-Key')).toBe(String(keysA.current().id));
  expect(last?.header.get('Mesh-Status-Seal')).toMatch(/^[\w-]{43}$/);
});

test('a forged composition put into the stream (unsealed, sealed with a key of its own, or with an unsafe seq) is ignored and counted; the serving replica’s keep flowing, with new machines', async () => {
  const before = sealB.refused();
  const next = held() + 1;
  const empty = JSON.stringify({ ...aComposition(next, 0), machines: [] });
  await putRaw(link.subjects.snapshot, Buffer.from(empty), framed('snapshot', next));
  const ownKey = framed('snapshot', next);
  for (const [k, v] of [
    ['Mesh-Status-Replica', 'replica-a'],
    ['Mesh-Status-Term', '7'],
    ['Mesh-Status-Key', String(keysA.current().id)],
    ['Mesh-Status-Seal', randomBytes(32).toString('base64url')],
  ])
    ownKey.set(k, v);
  await putRaw(link.subjects.snapshot, Buffer.from(empty), ownKey);
  await putRaw(link.subjects.snapshot, Buffer.from(JSON.stringify({ seq: 9007199254740992, machines: [] })), framed('snapshot', 9007199254740992));
  await eventually(() => sealB.refused()['seq-out-of-bounds'] > before['seq-out-of-bounds'], 'the unsafe seq counted');
  expect(sealB.refused().unsealed).toBeGreaterThan(before.unsealed);
  expect(sealB.refused().forged).toBeGreaterThan(before.forged);
  expect(held()).toBe(next - 1);
  expect(follower.current()!.machines.length).toBeGreaterThan(0);
  // What the serving replica composes next is taken, with the machine it heard.
  await serve(withMachine(served!, next, 'after-forgery'));
  await serve(withMachine(served!, next + 1, 'after-forgery-2'), 'start');
  await eventually(() => has('after-forgery-2'), 'the machines composed after the forgeries');
  expect(has('after-forgery')).toBe(true);
});

test('a composition sealed by a replica that does not hold the serving lease, or of a term older than one taken, is ignored and counted', async () => {
  const before = sealB.refused();
  const sealC = statusSeal({ replica: 'replica-c', keys: keysA, leases: leasesAs(() => 7), logger });
  const next = held() + 1;
  for (const part of await encodeStreamEntry('snapshot', withMachine(served!, next, 'from-c'), 1024 * 1024, {}, sealC))
    await putRaw(link.subjects.snapshot, part.data, part.headers);
  await eventually(() => sealB.refused()['not-serving'] > before['not-serving'], 'replica-c’s composition refused');
  expect(has('from-c')).toBe(false);
  // A takes over again (term 9): a message of term 7 is no longer its serving.
  holder = { replica: 'replica-a', term: 9 };
  termA = 9;
  await serve(withMachine(served!, held() + 1, 'term-9'), 'start');
  await eventually(() => has('term-9'), 'term 9 taken');
  const sealA7 = statusSeal({ replica: 'replica-a', keys: keysA, leases: leasesAs(() => 7), logger });
  holder = { replica: 'replica-a', term: 7 }; // a lease view gone back (a stale read): the term seen wins
  for (const part of await encodeStreamEntry('snapshot', withMachine(served!, held() + 1, 'term-7'), 1024 * 1024, {}, sealA7))
    await putRaw(link.subjects.snapshot, part.data, part.headers);
  await eventually(() => sealB.refused()['stale-term'] > before['stale-term'], 'the older term refused');
  expect(has('term-7')).toBe(false);
  holder = { replica: 'replica-a', term: 9 };
});

test('a key rotation keeps the follow going: the new key is read by every replica before it signs, and the key before stays valid for its grace', async () => {
  // A key not believed is refused as forged. (Other reasons may count meanwhile: a follower whose
  // consumer is made again under load reads the last snapshot again, the stale term-7 one.)
  const forgedBefore = sealB.refused().forged;
  // A replica that has not read the store since the rotation still seals with the key before.
  const keysBehind = await startReplicaKeys(store.db, logger);
  const sealBehind = statusSeal({ replica: 'replica-a', keys: keysBehind, leases: leasesAs(() => termA), logger });
  try {
    const oldKey = keysA.current().id;
    const newKey = await rotateReplicaKey(store.db, 1_500);
    expect(newKey).toBe(oldKey + 1);
    await Promise.all([keysA.reload(), keysB.reload()]);
    // Announced, not signing yet.
    expect(keysA.current().id).toBe(oldKey);
    await serve(withMachine(served!, held() + 1, 'before-activation'));
    await eventually(() => has('before-activation'), 'a composition sealed before the new key signs');
    await eventually(() => keysA.current().id === newKey, 'the new key signing', 5_000);
    await serve(withMachine(served!, held() + 1, 'new-key'));
    await eventually(() => has('new-key'), 'a composition sealed with the new key');
    // The key before, within its grace: still believed.
    const late = await encodeComposition(withMachine(served!, held() + 1, 'old-key-late'), 1024 * 1024, sealBehind);
    expect(late[0].headers?.get('Mesh-Status-Key')).toBe(String(oldKey));
    expect((await compositionAssembler({ sealing: sealB })({ data: late[0].data, headers: late[0].headers }))?.seq).toBe(held() + 1);
    expect(sealB.refused().forged).toBe(forgedBefore);
  } finally {
    keysBehind.stop();
  }
});

test('a sealed part whose gunzip passes the limit is refused and counted, and the follow goes on', async () => {
  const before = sealB.refused()['too-large'];
  // 501 gzip members of 1 MiB of zeros: half a megabyte that would gunzip to 501 MiB.
  const member = gzipSync(Buffer.alloc(1024 * 1024), { level: 9 });
  const bomb = Buffer.concat(Array.from({ length: Math.ceil(STATUS_UNZIPPED_MAX / (1024 * 1024)) + 1 }, () => member));
  const h = framed('snapshot', held() + 1);
  h.set('Content-Encoding', 'gzip');
  sealA.seal(h, bomb);
  await putRaw(link.subjects.snapshot, bomb, h);
  await eventually(() => sealB.refused()['too-large'] > before, 'the bomb refused', 20_000);
  await serve(withMachine(served!, held() + 1, 'after-bomb'), 'start');
  await eventually(() => has('after-bomb'), 'the follow after the bomb');
});

test('on the status subject, with the seal: only the serving replica’s composition is taken; a forged one, or one far past the seq held, is counted', async () => {
  const assemble = compositionAssembler({ sealing: sealB, held: () => 100 });
  const before = sealB.refused();
  const plain = await encodeComposition(aComposition(101, 3), 1024 * 1024);
  expect(await assemble({ data: plain[0].data, headers: plain[0].headers })).toBeUndefined();
  const sealed = await encodeComposition(aComposition(102, 3), 1024 * 1024, sealA);
  expect((await assemble({ data: sealed[0].data, headers: sealed[0].headers }))?.seq).toBe(102);
  const far = await encodeComposition(aComposition(100 + STATUS_SEQ_JUMP_MAX + 1, 3), 1024 * 1024, sealA);
  expect(await assemble({ data: far[0].data, headers: far[0].headers })).toBeUndefined();
  expect(sealB.refused().unsealed).toBe(before.unsealed + 1);
  expect(sealB.refused()['seq-jump']).toBe(before['seq-jump'] + 1);
  // Without a seal (a tool reading the subject) the bounds still hold: a seq of 2^53 is refused.
  await expect(compositionAssembler()({ data: Buffer.from(JSON.stringify({ seq: 2 ** 53, machines: [] })), headers: undefined })).rejects.toThrow(
    StatusRefused,
  );
});

test('a composition finished after its replica lost the serving lease is fenced, dropped rather than failed: neither put into the stream nor sent whole', async () => {
  const before = held();
  const late = withMachine(served!, before + 1, 'after-lease-lost');
  const publisher = statusPublisher({ nc, js: link.js, subjects: link.subjects, current: () => served, logger, sealing: sealA });
  termA = undefined; // the lease lost while it composed: its seal refuses
  try {
    await expect(publisher(late, 'news')).rejects.toBeInstanceOf(ServingFenced);
  } finally {
    termA = 7;
  }
  await new Promise((r) => setTimeout(r, 300));
  expect(has('after-lease-lost')).toBe(false);
  expect(held()).toBe(before);
});

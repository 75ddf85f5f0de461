import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { ensureStatusStream, STATUS_STREAM_MAX_BYTES, statusStreamName } from '../../../src/bus/status-stream.js';
import type { ComposeTrigger } from '../../../src/services/status/composing/poke.js';
import type { Composition } from '../../../src/services/status/composition.js';
import { LAST_HEARD_GRAIN_MS } from '../../../src/services/status/composition.js';
import { deltaIsEmpty, diffCompositions } from '../../../src/services/status/delta/delta.js';
import { type RunningStatusFeed, startStatusFeed } from '../../../src/services/status/live/feed.js';
import type { StatusStreamLink } from '../../../src/services/status/replicating/stream-follower.js';
import { coarsenLastHeard } from '../../../src/services/status/replicating/stream-publisher.js';
import { aComposition, oneMachineChanged } from '../../fixtures/compositions.js';
import { eventually } from '../../fixtures/live.js';
import { NATS_URL, uniqueName } from '../../fixtures/services.js';

const logger = pino({ level: 'silent' });
let nc: NatsConnection;
let controller: string;
let root: string;
let link: StatusStreamLink;
const asked: string[] = [];
const feeds: RunningStatusFeed[] = [];

beforeAll(async () => {
  nc = await connect({ servers: NATS_URL });
  controller = uniqueName('ctl_stream');
  root = uniqueName('mesh_stream');
  const jsm = await jetstreamManager(nc);
  const stream = await ensureStatusStream(jsm, controller, root, { historyHours: 1 });
  link = { js: jetstream(nc), jsm, ...stream, askSnapshot: () => asked.push('resync') };
});
afterAll(async () => {
  for (const f of feeds) await f.stop();
  const jsm = await jetstreamManager(nc);
  await jsm.streams.delete(statusStreamName(controller)).catch(() => undefined);
  await nc.close();
});

const feed = () => {
  const f = startStatusFeed(nc, `${root}.status`, logger, undefined, link);
  feeds.push(f);
  return f;
};

/** Every composition a feed accepts, in order. */
const recorded = (f: RunningStatusFeed) => {
  const seen: Composition[] = [];
  f.subscribe((c) => seen.push(c));
  return seen;
};

test('the status stream is made with a day-bounded age, bounded bytes and discard old, under the controller’s own subjects', async () => {
  const info = await link.jsm.streams.info(statusStreamName(controller));
  expect(info.config.subjects).toEqual([`${root}.status.${controller}.>`]);
  expect(info.config.max_bytes).toBe(STATUS_STREAM_MAX_BYTES);
  expect(info.config.max_age).toBe(3600 * 1e9);
  expect(info.config.discard).toBe('old');
  // Started again with another history, the limits are updated.
  await ensureStatusStream(link.jsm, controller, root, { historyHours: 2 });
  expect((await link.jsm.streams.info(statusStreamName(controller))).config.max_age).toBe(7200 * 1e9);
});

test('the serving feed publishes a snapshot then deltas; a replica started later rebuilds from the snapshot and the deltas after it', async () => {
  const serving = feed();
  let c = aComposition(10, 200);
  await serving.publish!(c, 'start');
  for (let seq = 11; seq <= 15; seq++) {
    c = oneMachineChanged(c, seq);
    await serving.publish!(c, 'news');
  }
  expect(serving.current()?.seq).toBe(15);
  const info = await link.jsm.streams.info(statusStreamName(controller));
  // One snapshot (seq 10, no delta before it) and five deltas.
  expect(info.state.messages).toBe(6);
  const last = await link.jsm.streams.getMessage(statusStreamName(controller), { seq: info.state.last_seq });
  expect(last?.header.get('Mesh-Status-Kind')).toBe('delta');
  expect(last?.header.get('Mesh-Status-Seq')).toBe('15');
  expect(last?.header.get('Mesh-Status-Base')).toBe('14');
  expect(last!.data.length).toBeLessThan(2_000);

  const replica = feed();
  await eventually(() => replica.current()?.seq === 15, 'the replica to reach seq 15');
  expect(replica.current()).toEqual(serving.current());
  expect(replica.streamStats()).toMatchObject({ snapshots: 1, deltas: 5, gaps: 0 });

  // Live deltas keep it equal.
  c = oneMachineChanged(c, 16);
  await serving.publish!(c, 'news');
  await eventually(() => replica.current()?.seq === 16, 'the replica to apply seq 16');
  expect(replica.current()).toEqual(serving.current());
  // A replica keeps the chain of deltas it applied, for subscribers that resume.
  expect(replica.changesAfter(14)?.map((d) => d.seq)).toEqual([15, 16]);
  for (const f of feeds.splice(0)) await f.stop();
});

test('a missing delta makes a replica ask for a snapshot; it never holds a wrong composition and catches up with the snapshot', async () => {
  const serving = feed();
  let c = aComposition(100, 50);
  const published = new Map<number, Composition>();
  const publish = async (next: Composition, trigger: ComposeTrigger = 'news') => {
    await serving.publish!(next, trigger);
    published.set(next.seq, serving.current()!);
  };
  await publish(c, 'takeover');
  for (let seq = 101; seq <= 104; seq++) await publish((c = oneMachineChanged(c, seq)));
  // The delta 101 → 102 is lost (deleted from the stream) before the replica reads it.
  const name = statusStreamName(controller);
  const info = await link.jsm.streams.info(name);
  let lost = 0;
  for (let s = info.state.first_seq; s <= info.state.last_seq; s++) {
    const m = await link.jsm.streams.getMessage(name, { seq: s }).catch(() => null);
    if (m?.header.get('Mesh-Status-Seq') === '102' && m.header.get('Mesh-Status-Kind') === 'delta') lost = s;
  }
  expect(lost).toBeGreaterThan(0);
  await link.jsm.streams.deleteMessage(name, lost);

  asked.length = 0;
  const replica = feed();
  const seen = recorded(replica);
  await eventually(() => replica.streamStats().gaps === 1, 'the replica to see the gap');
  await eventually(() => asked.length > 0, 'the replica to ask for a snapshot');
  // Deltas after the gap are not applied: it holds 101, which is right.
  expect(replica.current()?.seq).toBe(101);
  await publish((c = oneMachineChanged(c, 105)), 'resync');
  await eventually(() => replica.current()?.seq === 105, 'the replica to take the snapshot');
  expect(replica.current()).toEqual(serving.current());
  expect(seen.length).toBeGreaterThan(0);
  for (const composition of seen) expect(composition).toEqual(published.get(composition.seq));
  // After the snapshot, deltas apply again.
  await publish((c = oneMachineChanged(c, 106)));
  await eventually(() => replica.current()?.seq === 106, 'the replica to apply 106');
  expect(replica.current()).toEqual(serving.current());
});

test('a heartbeat alone is not a change: lastHeardAt moves in a delta only with a change of the machine or once a minute', () => {
  const before = aComposition(1, 3);
  const heard = (c: Composition, seq: number, ms: number, state?: 'LATE') => ({
    ...c,
    seq,
    machines: c.machines.map((m, i) => (i === 0 ? { ...m, lastHeardAt: new Date(Date.parse(m.lastHeardAt) + ms).toISOString(), ...(state && { state }) } : m)),
  });
  // Heard 10 s later, nothing else changed: the item before is kept (the same object), so no delta names it.
  const soon = coarsenLastHeard(before, heard(before, 2, 10_000));
  expect(soon.machines[0]).toBe(before.machines[0]);
  expect(deltaIsEmpty(diffCompositions(before, soon))).toBe(true);
  // A minute (LAST_HEARD_GRAIN_MS) later, or with its state changed, it is a change with the true instant.
  const late = heard(before, 3, LAST_HEARD_GRAIN_MS);
  expect(coarsenLastHeard(before, late).machines[0]).toBe(late.machines[0]);
  const changed = heard(before, 4, 10_000, 'LATE');
  expect(diffCompositions(before, coarsenLastHeard(before, changed)).machines.changed).toEqual([changed.machines[0]]);
});

test('coarsened against the coarsening before it, a composition gets the same answer as coarsened afresh, machine by machine', () => {
  const before = aComposition(1, 4);
  const heardAgain = (m: Composition['machines'][number], ms: number) => ({ ...m, lastHeardAt: new Date(Date.parse(m.lastHeardAt) + ms).toISOString() });
  // A full composition: every machine a new object, heard 10 s later; each is given back as it was.
  const full = { ...before, seq: 2, machines: before.machines.map((m) => heardAgain(m, 10_000)) };
  const first = coarsenLastHeard(before, full);
  expect(first.machines).toEqual(before.machines);
  const last = { composed: full.machines, published: first.machines };
  // The next keeps three of those objects; one is heard a minute later, one turned LATE.
  const [f0, f1, f2, f3] = full.machines;
  const next = { ...before, seq: 3, machines: [f0!, heardAgain(f1!, LAST_HEARD_GRAIN_MS), { ...f2!, state: 'LATE' as const }, f3!] };
  const remembered = coarsenLastHeard(first, next, LAST_HEARD_GRAIN_MS, last);
  expect(remembered).toEqual(coarsenLastHeard(first, next));
  expect(remembered.machines[0]).toBe(before.machines[0]);
  expect(remembered.machines[1]).toBe(next.machines[1]);
  expect(remembered.machines[2]).toBe(next.machines[2]);
  expect(remembered.machines[3]).toBe(before.machines[3]);
  // Against a list it did not publish, what it remembers is not used.
  const other = { ...first, machines: first.machines.map((m) => ({ ...m, site: 'elsewhere' })) };
  expect(coarsenLastHeard(other, next, LAST_HEARD_GRAIN_MS, last)).toEqual(coarsenLastHeard(other, next));
});

test('a heartbeat alone is no change beside machines that joined and left: each machine is matched by its name wherever the lists moved', () => {
  const before = aComposition(1, 6);
  const later = (m: Composition['machines'][number]) => ({ ...m, lastHeardAt: new Date(Date.parse(m.lastHeardAt) + 10_000).toISOString() });
  const [m0, m1, m2, m3, m4, m5] = before.machines;
  // m1 left, a new machine joined before m0 and another between m3 and m4; every machine that stayed was heard 10 s later.
  const joined = { ...m0!, name: `${m0!.name.slice(0, -1)}` };
  const between = { ...m3!, name: `${m3!.name}a` };
  const next = { ...before, seq: 2, machines: [joined, later(m0!), later(m2!), later(m3!), between, later(m4!), later(m5!)] };
  const coarse = coarsenLastHeard(before, next);
  expect(coarse.machines.map((m) => m.name)).toEqual(next.machines.map((m) => m.name));
  // Each machine heard again is given back as it was before; the two that joined are as composed.
  expect(coarse.machines).toEqual([joined, m0, m2, m3, between, m4, m5]);
  for (const m of [m0, m2, m3, m4, m5]) expect(coarse.machines).toContain(m);
  const delta = diffCompositions(before, coarse);
  expect(delta.machines.added.map((m) => m.name).sort()).toEqual([joined.name, between.name].sort());
  expect(delta.machines.removed).toEqual([m1!.name]);
  expect(delta.machines.changed).toEqual([]);
});

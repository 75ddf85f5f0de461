import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import type { Composition } from '../../src/services/status/composition.js';
import { applyDelta } from '../../src/services/status/delta/delta.js';
import { aComposition, everyMachineHeard, oneMachineChanged, randomNext, rng } from '../fixtures/compositions.js';
import { useGateway } from '../fixtures/gateway.js';
import { eventually, publishHeard, seqPastStart } from '../fixtures/live.js';
import { NATS_URL } from '../fixtures/services.js';
import { RawWsClient } from '../fixtures/ws-client.js';

const READER = 'Bearer reader-token-1';
const OPERATOR = 'Bearer operator-token-2';

const STATUS = `subscription { status { seq composedAt tookMs trigger machines { name site state lastHeardAt modules holdings { seat module derived } }
  seats { name held holders { machine module site derived } } unheldSeats callsRunning handActsThisWeek
  repeatedCauses { cause count firstAt lastAt } plans { id seat build state tier tiers behind openedAt endedAt stopReason } } }`;
const STATUS_FIELDS = STATUS.slice(STATUS.indexOf('status {') + 'status '.length, -2);
const LIST = (item: string) => `{ added { ${item} } addedAt changed { ${item} } removed order }`;
const CHANGES = `subscription { statusChanges { seq baseSeq full ${STATUS_FIELDS} delta { seq baseSeq composedAt tookMs trigger
  machines ${LIST('name site state lastHeardAt modules holdings { seat module derived }')}
  seats ${LIST('name held holders { machine module site derived }')}
  plans ${LIST('id seat build state tier tiers behind openedAt endedAt stopReason')}
  repeatedCauses ${LIST('cause count firstAt lastAt')}
  unheldSeats { added addedAt removed order } callsRunning handActsThisWeek } } }`;

const { gw: gateway } = useGateway('fanout', {
  tokens: [
    { name: 'dashboard', scopes: ['read'], token: 'reader-token-1' },
    { name: 'operator', scopes: ['read', 'act', 'admin'], token: 'operator-token-2' },
  ],
});
let nc: NatsConnection;
let seq = 0;
const clients: RawWsClient[] = [];

beforeAll(async () => {
  nc = await connect({ servers: NATS_URL });
  seq = await seqPastStart(gateway);
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await nc?.close();
});

// Each test completes its subscriptions; the next starts once the server has let their groups go.
afterEach(async () => {
  await eventually(() => fanout().stats().groups === 0, 'the server to let the groups go', 30_000, 20);
});

const fanout = () => gateway.http.fanout!;

async function client(authorization = READER): Promise<RawWsClient> {
  const c = await RawWsClient.connect(gateway.url, authorization);
  clients.push(c);
  return c;
}

const publish = (composition: Composition) => publishHeard(nc, gateway, composition);

const seqs = (c: RawWsClient, id: string) => c.of(id).map((m) => (m.payload.data?.status ?? m.payload.data?.statusChanges)?.seq);

test('two subscribers of one operation share one execution and one payload per composition', async () => {
  let last = await publish(aComposition(++seq, 50));
  const before = fanout().stats();
  const [a, b] = [await client(), await client()];
  a.subscribe('a', STATUS);
  b.subscribe('b', STATUS);
  await a.until(() => a.of('a').length === 1 && b.of('b').length === 1, 10_000, 'the current composition');
  for (let i = 0; i < 3; i++) last = await publish(oneMachineChanged(last, ++seq));
  await a.until(() => seqs(a, 'a').at(-1) === seq && seqs(b, 'b').at(-1) === seq, 10_000, 'the last composition');

  const after = fanout().stats();
  expect(after.groups - before.groups).toBe(1);
  expect(after.subscribers - before.subscribers).toBe(2);
  expect(seqs(a, 'a')).toEqual(seqs(b, 'b'));
  expect(after.executions - before.executions).toBe(seqs(a, 'a').length);
  expect(a.of('a').map((m) => JSON.stringify(m.payload))).toEqual(b.of('b').map((m) => JSON.stringify(m.payload)));
  expect(a.of('a').at(-1)!.payload.data.status.machines).toHaveLength(50);

  a.complete('a');
  b.complete('b');
  await a.until(() => fanout().stats().groups === before.groups, 5_000, 'the group to go');
});

test('subscribers with different access never share an execution', async () => {
  let last = await publish(aComposition(++seq, 20));
  const before = fanout().stats();
  const [reader, operator, reader2] = [await client(READER), await client(OPERATOR), await client(READER)];
  reader.subscribe('r', STATUS);
  operator.subscribe('o', STATUS);
  await reader.until(() => reader.of('r').length === 1 && operator.of('o').length === 1, 10_000, 'the current composition');
  reader2.subscribe('r2', STATUS);
  await reader2.until(() => reader2.of('r2').length === 1, 10_000, 'the current composition');
  expect(fanout().stats().groups - before.groups).toBe(2);

  const executions = fanout().stats().executions;
  last = await publish(oneMachineChanged(last, ++seq));
  await reader.until(() => [seqs(reader, 'r'), seqs(operator, 'o'), seqs(reader2, 'r2')].every((s) => s.at(-1) === seq), 10_000, 'the next composition');
  expect(fanout().stats().executions - executions).toBe(2);
  for (const [c, id] of [
    [reader, 'r'],
    [operator, 'o'],
    [reader2, 'r2'],
  ] as const)
    c.complete(id);
  await reader.until(() => fanout().stats().groups === before.groups, 5_000, 'the groups to go');
});

test('a stalled subscriber holds at most one composition and gets the latest once it drains', async () => {
  let last = await publish(aComposition(++seq, 4_000));
  const [stalled, healthy] = [await client(), await client()];
  stalled.subscribe('s', STATUS);
  healthy.subscribe('h', STATUS);
  await stalled.until(() => stalled.of('s').length === 1 && healthy.of('h').length === 1, 20_000, 'the current composition');
  const size = stalled.of('s')[0].bytes;
  expect(size).toBeGreaterThan(500_000);

  stalled.socket.pause();
  const published = 30;
  for (let i = 0; i < published; i++) last = await publish(oneMachineChanged(last, ++seq));
  await healthy.until(() => seqs(healthy, 'h').at(-1) === seq, 30_000, 'the healthy subscriber to keep up');
  // 30 compositions of this size are ~17 MB: far past what the kernel's socket buffers take.
  const stats = fanout().stats();
  expect(stats.waiting).toBeLessThanOrEqual(1);
  expect(stats.maxBuffered).toBeLessThan(2 * size);
  expect(stats.skipped).toBeGreaterThan(0);

  stalled.socket.resume();
  await stalled.until(() => seqs(stalled, 's').at(-1) === seq, 30_000, 'the stalled subscriber to get the latest');
  expect(stalled.of('s').length).toBeLessThan(published);
  expect(stalled.of('s').at(-1)!.payload.data.status.machines[seq % 4_000].state).toBe(last.machines[seq % 4_000].state);
  stalled.complete('s');
  healthy.complete('h');
});

test('statusChanges sends the whole composition, then deltas that rebuild every composition exactly', async () => {
  const random = rng(7);
  let last = await publish(aComposition(++seq, 40));
  const c = await client();
  c.subscribe('d', CHANGES);
  await c.until(() => c.of('d').length === 1, 10_000, 'the whole composition');
  const published: Composition[] = [last];
  for (let i = 0; i < 20; i++) {
    const next = randomNext(last, random);
    seq = next.seq;
    published.push((last = await publish(next)));
    await c.until(() => seqs(c, 'd').at(-1) === seq, 10_000, `composition ${seq}`);
  }

  const messages = c.of('d').map((m) => m.payload.data.statusChanges);
  expect(messages[0]).toMatchObject({ seq: published[0].seq, baseSeq: null, delta: null });
  expect(messages.length).toBeGreaterThan(1);
  expect(messages.slice(1).every((m) => m.full === null && m.delta.baseSeq === m.baseSeq)).toBe(true);
  let held = messages[0].full as Composition;
  for (const m of messages.slice(1)) {
    held = applyDelta(held, m.delta);
    expect(held).toEqual(published.find((p) => p.seq === m.seq));
  }
  const { data } = await gateway.gql(`{ status ${STATUS_FIELDS} }`, undefined, { authorization: READER });
  expect(held).toEqual(data.status);
  expect(JSON.stringify(held)).toBe(JSON.stringify(last));
  c.complete('d');
});

test('compositions of every size reach a subscriber whole: small, under 64 KiB and far over it', async () => {
  const c = await client();
  c.subscribe('s', STATUS);
  const sizes: number[] = [];
  for (const machines of [20, 150, 4_000]) {
    const published = await publish(aComposition(++seq, machines));
    await c.until(() => seqs(c, 's').at(-1) === seq, 20_000, `the composition of ${machines} machines`);
    const message = c.of('s').at(-1)!;
    expect(message.payload.data.status).toEqual(published);
    sizes.push(message.bytes);
  }
  // One below the size a payload is written by reference from (16 KiB), one within a 16-bit frame
  // length, one past it (a 64-bit length).
  expect(sizes[0]).toBeLessThan(16 * 1024);
  expect(sizes[1]).toBeGreaterThan(16 * 1024);
  expect(sizes[1]).toBeLessThan(64 * 1024);
  expect(sizes[2]).toBeGreaterThan(64 * 1024);
  c.complete('s');
});

test('a change subscriber that skipped compositions gets a whole one, never a delta it cannot apply', async () => {
  let last = await publish(aComposition(++seq, 4_000));
  const c = await client();
  c.subscribe('g', CHANGES);
  await c.until(() => c.of('g').length === 1, 20_000, 'the whole composition');
  c.socket.pause();
  // Every machine heard again: each delta is as large as the whole, so the socket backs up.
  for (let i = 0; i < 30; i++) last = await publish(everyMachineHeard(last, ++seq));
  c.socket.resume();
  await c.until(() => seqs(c, 'g').at(-1) === seq, 30_000, 'the latest');
  const messages = c.of('g').map((m) => m.payload.data.statusChanges);
  let held: Composition | undefined;
  for (const m of messages) {
    if (m.full) held = m.full;
    else {
      expect(m.baseSeq).toBe(held!.seq);
      held = applyDelta(held!, m.delta);
    }
  }
  expect(messages.some((m, i) => i > 0 && m.full)).toBe(true);
  expect(held).toEqual(last);
  c.complete('g');
});

test('a live subscription whose variables are wrong is refused once, before any group is made', async () => {
  await publish(aComposition(++seq, 5));
  const c = await client();
  c.subscribe('v', 'subscription ($limit: Int!) { status { seq } }');
  await c.until(() => c.errors.length === 1, 5_000, 'the error');
  expect(JSON.stringify(c.errors[0].payload)).toMatch(/\$limit/);
  expect(fanout().stats().groups).toBe(0);
});

test('other subscriptions take the ordinary path and a socket without a known token is closed with 4403', async () => {
  const c = await client();
  c.subscribe('t', 'subscription { ticks(count: 3, everyMs: 50) }');
  await c.until(() => c.of('t').length === 1, 5_000, 'the first tick');
  expect(fanout().stats()).toMatchObject({ groups: 0, subscribers: 0 });
  await c.until(() => c.completed.has('t'), 5_000, 'the ticks to complete');
  expect(c.of('t').map((m) => m.payload.data.ticks)).toEqual([1, 2, 3]);

  await expect(RawWsClient.connect(gateway.url, 'Bearer nobody')).rejects.toMatchObject({ code: 4403 });
});

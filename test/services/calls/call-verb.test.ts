import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, beforeEach, expect, test } from 'vitest';
import { refusedCalls } from '../../../src/services/calls/records.js';
import { useGateway } from '../../fixtures/gateway.js';

const { gw: gateway, env } = useGateway('callverb');
let nc: NatsConnection;
/** What the queue seat's holder (this test) heard, and how it answers. */
const heard: { subject: string; body: unknown; reply?: string }[] = [];
let answerWith: ((body: any) => string | undefined) | undefined;

beforeAll(async () => {
  nc = await connect({ servers: env.env.NATS_URL });
  nc.subscribe(`${env.subjects}.seat.queue.*`, {
    callback: (_err, msg) => {
      heard.push({ subject: msg.subject, body: msg.json(), reply: msg.reply });
      const text = answerWith?.(msg.json());
      if (text !== undefined) msg.respond(text);
    },
  });
  await nc.flush();
});
beforeEach(() => {
  heard.length = 0;
  answerWith = undefined;
});
afterAll(async () => {
  await nc?.close();
});

const CALL = 'id seat verb args caller door state answer answerJson error errorCode endedAt';

async function callVerb(args: string) {
  const r = await gateway.gql(
    `mutation { callVerb(${args}) { __typename ... on MutationCallVerbSuccess { data { ${CALL} } } ... on Error { code message } ... on InvalidError { field } } }`,
  );
  if (r.errors) throw new Error(JSON.stringify(r.errors));
  return r.data.callVerb.data ?? r.data.callVerb;
}

test("a call judged good is sent to the seat's subject and its answer recorded", async () => {
  answerWith = (body) => JSON.stringify({ ok: true, answer: { queue: body.queue, depth: 17 } });
  const call = await callVerb('seat: "queue", verb: "depth", args: {queue: "orders"}');
  expect(heard).toEqual([
    { subject: `${env.subjects}.seat.queue.depth`, body: { queue: 'orders' }, reply: expect.stringMatching(new RegExp(`^_INBOX\\.${env.controller}\\.`)) },
  ]);
  expect(call).toMatchObject({
    seat: 'queue',
    verb: 'depth',
    args: { queue: 'orders' },
    caller: 'local',
    door: 'GRAPHQL',
    state: 'OK',
    answerJson: { queue: 'orders', depth: 17 },
    error: null,
  });
  expect(call.endedAt).not.toBeNull();
});

test('the seat’s error answer, a time-out and no responders are recorded on the call as FAILED', async () => {
  answerWith = () => JSON.stringify({ ok: false, error: { code: 'NO_SUCH_QUEUE', message: 'no queue named orders' } });
  expect(await callVerb('seat: "queue", verb: "depth", args: {queue: "orders"}')).toMatchObject({
    state: 'FAILED',
    errorCode: 'NO_SUCH_QUEUE',
    error: 'no queue named orders',
  });
  answerWith = () => undefined;
  expect(await callVerb('seat: "queue", verb: "depth", args: {queue: "orders"}, timeoutMs: 200')).toMatchObject({
    state: 'FAILED',
    errorCode: 'TIMEOUT',
    error: 'no answer within 200 ms',
  });
  answerWith = () => 'not json';
  expect(await callVerb('seat: "queue", verb: "depth", args: {queue: "orders"}')).toMatchObject({
    state: 'FAILED',
    errorCode: 'BAD_ANSWER',
    answer: '"not json"',
  });
  expect(await callVerb('seat: "registry", verb: "has", args: {build: "b1"}')).toMatchObject({ state: 'FAILED', errorCode: 'NO_RESPONDERS' });
  const { data } = await gateway.gql(`{ calls(state: FAILED, seat: "queue") { edges { node { errorCode } } } }`);
  expect(data.calls.edges.map((e: any) => e.node.errorCode)).toEqual(['BAD_ANSWER', 'TIMEOUT', 'NO_SUCH_QUEUE']);
});

test('refused before anything is sent: unknown seat or verb, missing, unknown or mistyped argument, a time-out out of range', async () => {
  answerWith = () => JSON.stringify({ ok: true, answer: 1 });
  expect(await callVerb('seat: "nope", verb: "depth"')).toMatchObject({ __typename: 'NotFoundError', message: 'no seat named "nope"' });
  expect(await callVerb('seat: "queue", verb: "purge"')).toMatchObject({ __typename: 'NotFoundError', message: 'no verb named "queue.purge"' });
  expect(await callVerb('seat: "queue", verb: "depth"')).toMatchObject({
    __typename: 'InvalidError',
    field: 'queue',
    message: 'queue.depth requires queue (String)',
  });
  expect(await callVerb('seat: "queue", verb: "depth", args: {queue: "q", colour: "red"}')).toMatchObject({ __typename: 'InvalidError', field: 'colour' });
  expect(await callVerb('seat: "queue", verb: "depth", args: {queue: 5}')).toMatchObject({
    __typename: 'InvalidError',
    message: 'queue.depth: queue must be String, got number 5',
  });
  expect(await callVerb('seat: "queue", verb: "depth", args: [1, 2]')).toMatchObject({ __typename: 'InvalidError', field: 'args' });
  expect(await callVerb('seat: "queue", verb: "depth", args: {queue: "q"}, timeoutMs: 60001')).toMatchObject({
    __typename: 'InvalidError',
    field: 'timeoutMs',
  });
  expect(await callVerb('seat: "a.b", verb: "depth"')).toMatchObject({ __typename: 'InvalidError', field: 'seat' });
  expect(heard).toEqual([]);
  // A refusal is counted, never kept: none of them is a call (issue 35).
  const { data } = await gateway.gql(`{ calls(first: 8) { edges { node { seat verb state errorCode } } } }`);
  expect(data.calls.edges.map((e: any) => e.node).filter((c: any) => ['a.b', 'nope'].includes(c.seat) || c.verb === 'purge')).toEqual([]);
  expect(refusedCalls(gateway.mesh).get('INVALID')).toBeGreaterThanOrEqual(6);
});

test("a seat's verb defined by an operator is judged against the row, through an alias too", async () => {
  const defined = await gateway.gql(`mutation($protocol: String) { defineSeat(input: { name: "cache", protocol: $protocol }) { __typename } }`, {
    protocol: JSON.stringify({
      serves: [
        {
          name: 'evict',
          acting: true,
          args: [
            { name: 'keys', type: '[String]', required: true },
            { name: 'ttl', type: 'Int' },
          ],
        },
      ],
    }),
  });
  expect(defined.data.defineSeat.__typename).toBe('MutationDefineSeatSuccess');
  await gateway.gql(`mutation { renameSeat(from: "cache", to: "cache2") { __typename } }`);
  const got: unknown[] = [];
  const sub = nc.subscribe(`${env.subjects}.seat.cache2.evict`, {
    callback: (_e, m) => {
      got.push(m.json());
      m.respond(JSON.stringify({ ok: true, answer: 'evicted' }));
    },
  });
  await nc.flush();
  try {
    expect(await callVerb('seat: "cache", verb: "evict", args: {keys: "k1"}')).toMatchObject({
      __typename: 'InvalidError',
      message: 'cache2.evict: keys must be [String], got string "k1"',
    });
    expect(await callVerb('seat: "cache", verb: "evict", args: {keys: ["k1"], ttl: 1.5}')).toMatchObject({ __typename: 'InvalidError', field: 'ttl' });
    expect(await callVerb('seat: "cache", verb: "evict", args: {keys: ["k1", "k2"], ttl: 30}')).toMatchObject({
      seat: 'cache2',
      state: 'OK',
      answerJson: 'evicted',
    });
    expect(got).toEqual([{ keys: ['k1', 'k2'], ttl: 30 }]);
    const byOldName = (await gateway.gql(`{ calls(seat: "cache") { edges { node { seat state } } } }`)).data.calls.edges.map((e: any) => e.node);
    // The two refused before anything was sent are counted, not kept.
    expect(byOldName).toEqual([{ seat: 'cache2', state: 'OK' }]);
  } finally {
    sub.unsubscribe();
  }
});

test('callVerb through the NATS door records the forwarded call under the target seat, named by its subject', async () => {
  answerWith = () => JSON.stringify({ ok: true, answer: 3 });
  const bob = await connect({ servers: env.env.NATS_URL, inboxPrefix: '_INBOX.bob' });
  try {
    const reply = await bob.request(
      `${env.subjects}.seat.${env.controller}.callVerb.bob`,
      JSON.stringify({ seat: 'queue', verb: 'depth', args: { queue: 'q' } }),
    );
    expect(reply.json()).toMatchObject({ ok: true, answer: { seat: 'queue', verb: 'depth', caller: 'bob', door: 'NATS', state: 'OK', answer: '3' } });
    expect(reply.headers?.get('Mesh-Call')).toBe(reply.json<any>().answer.id);
  } finally {
    await bob.close();
  }
});

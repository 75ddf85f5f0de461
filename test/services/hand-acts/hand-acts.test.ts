import { AckPolicy, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { countHandActsSince } from '../../../src/services/hand-acts/hand-acts.js';
import { useGateway } from '../../fixtures/gateway.js';
import { eventually } from '../../fixtures/live.js';
import { aMachine } from '../../fixtures/mesh.js';
import { aTokensFile, startTestGateway, type TestGateway, uniqueName } from '../../fixtures/services.js';

const { gw: a, env } = useGateway('handacts');
let b: TestGateway;
let nc: NatsConnection;
let jsm: JetStreamManager;
const stream = uniqueName('RST');

beforeAll(async () => {
  b = await startTestGateway(env.env);
  nc = await connect({ servers: env.env.NATS_URL });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  await jsm?.streams.delete(stream).catch(() => undefined);
  await nc?.close();
  await b?.stop();
});

const record = (gateway: TestGateway, fields: string) =>
  gateway.gql(
    `mutation { recordHandAct(${fields}) { __typename ... on MutationRecordHandActSuccess { data { id at actor act target why cause condition callId } } ... on Error { message code } ... on InvalidError { field } } }`,
  );

test('a hand-act is kept with its why, cause, condition and call, and listed on every replica newest first', async () => {
  const made = [];
  for (const i of [1, 2, 3]) {
    const r = await record(a, `act: "restarted-agent", target: "m${i}", why: "agent stuck ${i}", cause: "agent-hang", condition: "LATE for 5 min"`);
    made.push(r.data.recordHandAct.data);
  }
  expect(made[0]).toMatchObject({
    actor: 'local',
    act: 'restarted-agent',
    target: 'm1',
    why: 'agent stuck 1',
    cause: 'agent-hang',
    condition: 'LATE for 5 min',
  });
  const call = (await a.gql(`query($id: ID!) { call(id: $id) { verb state door } }`, { id: made[0].callId })).data.call;
  expect(call).toEqual({ verb: 'recordHandAct', state: 'OK', door: 'GRAPHQL' });
  // Replica b never wrote them: its view of the bucket has them within moments.
  await expect.poll(async () => (await b.gql(`{ handActs(cause: "agent-hang") { edges { node { id } } } }`)).data.handActs.edges.length).toBe(3);
  const page1 = (await b.gql(`{ handActs(first: 2, cause: "agent-hang") { edges { node { id target } } pageInfo { hasNextPage endCursor } } }`)).data.handActs;
  expect(page1.edges.map((e: any) => e.node.target)).toEqual(['m3', 'm2']);
  expect(page1.pageInfo.hasNextPage).toBe(true);
  const page2 = (
    await b.gql(`query($after: String) { handActs(first: 2, cause: "agent-hang", after: $after) { edges { node { target } } pageInfo { hasNextPage } } }`, {
      after: page1.pageInfo.endCursor,
    })
  ).data.handActs;
  expect(page2.edges.map((e: any) => e.node.target)).toEqual(['m1']);
  expect(page2.pageInfo.hasNextPage).toBe(false);
  const since = (await b.gql(`query($since: DateTime) { handActs(since: $since, cause: "agent-hang") { edges { node { target } } } }`, { since: made[1].at }))
    .data.handActs;
  expect(since.edges.map((e: any) => e.node.target)).toEqual(['m3', 'm2']);
  const repeated = (await b.gql(`{ repeatedCauses { cause count firstAt lastAt } }`)).data.repeatedCauses;
  expect(repeated).toContainEqual({ cause: 'agent-hang', count: 3, firstAt: made[0].at, lastAt: made[2].at });
  const future = (await b.gql(`{ repeatedCauses(since: "2999-01-01T00:00:00Z") { cause } }`)).data.repeatedCauses;
  expect(future).toEqual([]);
  // Counted from the instant given, as repeatedCauses is: the three from the first on, none from tomorrow.
  const before = countHandActsSince(b.mesh, new Date(made[0].at));
  expect(before).toBeGreaterThanOrEqual(3);
  expect(countHandActsSince(b.mesh, new Date(Date.now() + 86_400_000))).toBe(0);
  expect(countHandActsSince(b.mesh)).toBeGreaterThanOrEqual(before);
});

test('a blank why, a blank act and an over-long cause are typed errors; only the act failed after admission is kept', async () => {
  expect((await record(a, `act: "x", why: ""`)).data.recordHandAct).toMatchObject({ __typename: 'InvalidError', field: 'why', code: 'INVALID' });
  expect((await record(a, `act: "  ", why: "because"`)).data.recordHandAct).toMatchObject({ __typename: 'InvalidError', field: 'act' });
  expect((await record(a, `act: "x", why: "because", cause: "${'c'.repeat(201)}"`)).data.recordHandAct).toMatchObject({
    __typename: 'InvalidError',
    field: 'cause',
  });
  const failed = (await a.gql(`{ calls(state: FAILED, seat: "${env.controller}") { edges { node { verb errorCode } } } }`)).data.calls.edges;
  // why and cause are judged before admission: refused, counted, not kept (issue 35); act is judged by the act itself.
  expect(failed.filter((e: any) => e.node.verb === 'recordHandAct')).toEqual([{ node: { verb: 'recordHandAct', errorCode: 'INVALID' } }]);
});

test('acting verbs need the act scope', async () => {
  const tokens = aTokensFile([
    { name: 'reader', scopes: ['read'], token: 'r-token' },
    { name: 'ops', scopes: ['read', 'act'], token: 'o-token' },
  ]);
  const guarded = await startTestGateway({ ...env.env, MESH_TOKENS_FILE: tokens.path });
  try {
    const refused = await guarded.gql(`mutation { recordHandAct(act: "x", why: "y") { __typename ... on Error { message } } }`, undefined, {
      authorization: 'Bearer r-token',
    });
    expect(refused.data.recordHandAct).toEqual({ __typename: 'ForbiddenError', message: 'reader may not run recordHandAct: it needs the act scope' });
    const allowed = await guarded.gql(
      `mutation { recordHandAct(act: "x", why: "y") { ... on MutationRecordHandActSuccess { data { actor callId } } } }`,
      undefined,
      { authorization: 'Bearer o-token' },
    );
    expect(allowed.data.recordHandAct.data.actor).toBe('ops');
    const call = await guarded.gql(
      `query($id: ID!) { call(id: $id) { caller } }`,
      { id: allowed.data.recordHandAct.data.callId },
      { authorization: 'Bearer o-token' },
    );
    expect(call.data.call.caller).toBe('ops');
  } finally {
    await guarded.stop();
    tokens.remove();
  }
});

describe('resetConsumer, for real on a JetStream durable consumer', () => {
  const subject = () => `${env.subjects}.rst.work`;
  beforeAll(async () => {
    await jsm.streams.add({ name: stream, subjects: [`${env.subjects}.rst.>`] });
    const js = jetstream(nc);
    for (let i = 1; i <= 5; i++) await js.publish(subject(), `job ${i}`);
    await jsm.consumers.add(stream, {
      durable_name: 'worker',
      ack_policy: AckPolicy.Explicit,
      filter_subject: subject(),
      ack_wait: 30_000_000_000,
      max_deliver: 7,
    });
    const consumer = await js.consumers.get(stream, 'worker');
    const batch = await consumer.fetch({ max_messages: 3, expires: 2_000 });
    for await (const m of batch) m.ack();
    await nc.flush();
    await eventually(async () => (await jsm.consumers.info(stream, 'worker')).num_pending === 2, 'two messages left pending', 10_000, 50);
  });

  const reset = (args: string) =>
    a.gql(
      `mutation { resetConsumer(${args}) { __typename ... on MutationResetConsumerSuccess { data { stream consumer deliverPolicy startSeq startTime pendingBefore pendingAfter } } ... on Error { message code } } }`,
    );

  test('delivery starts again from the first message, the configuration kept, and a hand-act left', async () => {
    const r = await reset(`stream: "${stream}", consumer: "worker", why: "jobs were acked by a broken build", cause: "bad-build"`);
    expect(r.data.resetConsumer.data).toEqual({
      stream,
      consumer: 'worker',
      deliverPolicy: 'all',
      startSeq: null,
      startTime: null,
      pendingBefore: 2,
      pendingAfter: 5,
    });
    const info = await jsm.consumers.info(stream, 'worker');
    expect(info.config).toMatchObject({
      durable_name: 'worker',
      ack_policy: 'explicit',
      filter_subject: subject(),
      ack_wait: 30_000_000_000,
      max_deliver: 7,
      deliver_policy: 'all',
    });
    const acts = (await a.gql(`{ handActs(cause: "bad-build") { edges { node { act target why callId } } } }`)).data.handActs.edges;
    expect(acts[0].node).toMatchObject({ act: 'resetConsumer', target: `${stream}/worker`, why: 'jobs were acked by a broken build' });
  });

  test('from a sequence or an instant when the arguments say so', async () => {
    const bySeq = await reset(`stream: "${stream}", consumer: "worker", startSeq: 4, why: "replay the last two"`);
    expect(bySeq.data.resetConsumer.data).toMatchObject({ deliverPolicy: 'by_start_sequence', startSeq: 4, pendingAfter: 2 });
    const byTime = await reset(`stream: "${stream}", consumer: "worker", startTime: "2000-01-01T00:00:00Z", why: "replay since the millennium"`);
    expect(byTime.data.resetConsumer.data).toMatchObject({ deliverPolicy: 'by_start_time', startTime: '2000-01-01T00:00:00.000Z', pendingAfter: 5 });
  });

  test('refuses an unknown consumer or stream, an ephemeral consumer, and both starts at once', async () => {
    expect((await reset(`stream: "${stream}", consumer: "nobody", why: "w"`)).data.resetConsumer).toMatchObject({
      __typename: 'NotFoundError',
      message: `no consumer named "${stream}/nobody"`,
    });
    expect((await reset(`stream: "NO_SUCH_STREAM_${stream}", consumer: "worker", why: "w"`)).data.resetConsumer).toMatchObject({ __typename: 'NotFoundError' });
    const ephemeral = await jsm.consumers.add(stream, { ack_policy: AckPolicy.None, inactive_threshold: 60_000_000_000 });
    expect((await reset(`stream: "${stream}", consumer: "${ephemeral.name}", why: "w"`)).data.resetConsumer).toMatchObject({ __typename: 'ConflictError' });
    expect((await reset(`stream: "${stream}", consumer: "worker", startSeq: 1, startTime: "2020-01-01T00:00:00Z", why: "w"`)).data.resetConsumer).toMatchObject(
      { __typename: 'InvalidError' },
    );
  });
});

test('push leaves a hand-act naming its plan and its call', async () => {
  await aMachine(a.mesh.db, { name: 'ha-m1', site: 'eu-1', modules: ['broker'], claims: { broker: ['queue'] } });
  const pushed = (
    await a.gql(`mutation { push(seat: "queue", build: "b-42", why: "fix for the leak", cause: "memory-leak") { ... on MutationPushSuccess { data { id } } } }`)
  ).data.push.data;
  const act = (await a.gql(`{ handActs(first: 1, cause: "memory-leak") { edges { node { act target callId } } } }`)).data.handActs.edges[0].node;
  expect(act).toMatchObject({ act: 'push', target: `${pushed.id} (b-42 to queue)` });
  const call = (await a.gql(`query($id: ID!) { call(id: $id) { verb answerJson } }`, { id: act.callId })).data.call;
  expect(call).toMatchObject({ verb: 'push', answerJson: { id: pushed.id, state: 'OPEN' } });
});

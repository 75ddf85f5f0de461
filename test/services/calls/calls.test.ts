import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CALLS_KEPT_PER_CALLER } from '../../../src/services/calls/records.js';
import { CONTROLLER_VERBS } from '../../../src/services/controller/verbs.js';
import { natsCall as callOverNats } from '../../fixtures/calls.js';
import { type ChildGateway, spawnGateway } from '../../fixtures/child.js';
import { type NatsServer, startNatsServer } from '../../fixtures/nats-server.js';
import { type TestEnv, testEnv } from '../../fixtures/services.js';

let env: TestEnv;
let gateway: ChildGateway;
let nc: NatsConnection;

beforeAll(async () => {
  env = await testEnv('calls');
  gateway = await spawnGateway(env.env);
  nc = await connect({ servers: env.env.NATS_URL });
});
afterAll(async () => {
  await nc?.close();
  await gateway?.stop();
  await env?.cleanup();
});

/** A controller verb's subject, sent by `user` (acting verbs need one), or by nobody in particular (''). */

/** A NATS request to a controller verb, sent as `user`: the answer body and the call id from the Mesh-Call header. */
const natsCall = (conn: NatsConnection, verb: string, body: string | object = {}, user = 'tester') => callOverNats(conn, env, verb, body, { user });

const CALL_FIELDS = 'id seat verb args caller door state startedAt endedAt answer answerJson answerTruncated answerBytes error errorCode replica';

async function callById(id: string) {
  return gateway.gql(`query($id: ID!) { call(id: $id) { ${CALL_FIELDS} } }`, { id });
}

test('a mutation is recorded as a call of the GraphQL door, named by the token, with its answer', async () => {
  const { data } = await gateway.gql(`mutation { recordHandAct(act: "restarted-broker", target: "m1", why: "it hung") {
    ... on MutationRecordHandActSuccess { data { id callId why actor } } } }`);
  const act = data.recordHandAct.data;
  expect(act).toMatchObject({ why: 'it hung', actor: 'local' });
  const call = (await callById(act.callId)).data.call;
  expect(call).toMatchObject({
    seat: env.controller,
    verb: 'recordHandAct',
    caller: 'local',
    door: 'GRAPHQL',
    state: 'OK',
    answerTruncated: false,
    replica: gateway.replica,
  });
  expect(call.answerJson).toMatchObject({ id: act.id, act: 'restarted-broker', target: 'm1' });
  expect(call.args).toMatchObject({ act: 'restarted-broker', why: 'it hung' });
  expect(call.answerBytes).toBe(Buffer.byteLength(call.answer));
});

test("the controller's seat row shows this build's verbs", async () => {
  const { data } = await gateway.gql(`query($name: String!) { seat(name: $name) { serves { name acting args { name type required } } } }`, {
    name: env.controller,
  });
  expect(data.seat.serves).toEqual(CONTROLLER_VERBS);
});

test('a NATS caller is named from its subject; an act on the unnamed subject is refused and not kept, whatever its inbox', async () => {
  const alice = await connect({ servers: env.env.NATS_URL, inboxPrefix: '_INBOX.alice' });
  try {
    const { body, callId } = await natsCall(alice, 'recordHandAct', { act: 'cleared-queue', why: 'backlog after outage', cause: 'broker-restart' }, 'alice');
    expect(body).toMatchObject({ ok: true, answer: { act: 'cleared-queue', actor: 'alice', callId } });
    const call = (await callById(callId!)).data.call;
    expect(call).toMatchObject({ caller: 'alice', door: 'NATS', state: 'OK', verb: 'recordHandAct' });
    const inboxOnly = await natsCall(alice, 'recordHandAct', { act: 'probe', why: 'named by inbox only' }, '');
    expect(inboxOnly.body).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
    // A refusal is counted in /metrics, not kept: a flood of them cannot push real calls out.
    expect(inboxOnly.callId).toBeUndefined();
  } finally {
    await alice.close();
  }
  const { data } = await gateway.gql(`{ calls(caller: "alice") { edges { node { caller verb } } } }`);
  expect(data.calls.edges.map((e: any) => e.node)).toEqual([{ caller: 'alice', verb: 'recordHandAct' }]);
});

test('every acting verb is refused without why, and with a blank why, through both doors', async () => {
  const acting = CONTROLLER_VERBS.filter((v) => v.acting);
  expect(acting.map((v) => v.name).sort()).toEqual([
    'closePlan',
    'forgetMachine',
    'push',
    'recordHandAct',
    'removeAlias',
    'resetConsumer',
    'resumePlan',
    'retireSeat',
    'stopPlan',
  ]);
  const required: Record<string, string> = {
    push: 'seat: "queue", build: "b1"',
    stopPlan: 'id: "plan-x"',
    resumePlan: 'id: "plan-x"',
    closePlan: 'id: "plan-x"',
    resetConsumer: 'stream: "S", consumer: "c"',
    recordHandAct: 'act: "x"',
    removeAlias: 'alias: "a"',
    retireSeat: 'seat: "s"',
    forgetMachine: 'machine: "m"',
  };
  for (const verb of acting) {
    const missing = await gateway.gql(`mutation { ${verb.name}(${required[verb.name]}) { __typename } }`);
    expect(missing.errors?.[0]?.message, verb.name).toMatch(/argument "why" of type "String!" is required/);
    const blank = await gateway.gql(`mutation { ${verb.name}(${required[verb.name]}, why: "   ") { __typename ... on InvalidError { field message } } }`);
    expect(blank.data?.[verb.name], verb.name).toMatchObject({ __typename: 'InvalidError', field: 'why' });
    const nats = await natsCall(nc, verb.name, {});
    if (['removeAlias', 'retireSeat', 'forgetMachine'].includes(verb.name)) {
      // Without MESH_NATS_USERS_FILE a NATS user has read and act, never admin: refused before its arguments, not kept.
      expect(nats.body, verb.name).toEqual({ ok: false, error: { code: 'FORBIDDEN', message: `tester may not run ${verb.name}: it needs the admin scope` } });
      expect(nats.callId).toBeUndefined();
      continue;
    }
    expect(nats.body, verb.name).toMatchObject({ ok: false, error: { code: 'INVALID' } });
    expect(nats.body.error.message).toMatch(/requires|why/);
    // A refusal is counted, never kept (issue 35): the answer names no call.
    expect(nats.callId, verb.name).toBeUndefined();
  }
  const { data } = await gateway.gql(`{ calls(state: FAILED, first: 100) { edges { node { door verb errorCode } } } }`);
  expect(data.calls.edges.filter((e: any) => e.node.errorCode === 'INVALID')).toEqual([]);
});

test('repeatedCauses counts a cause seen three times and leaves out one seen once', async () => {
  for (let i = 0; i < 3; i++) {
    const r = await gateway.gql(`mutation { recordHandAct(act: "freed-disk", target: "m${i}", why: "disk at 100%", cause: "disk-full") { __typename } }`);
    expect(r.data.recordHandAct.__typename).toBe('MutationRecordHandActSuccess');
  }
  await gateway.gql(`mutation { recordHandAct(act: "rebooted", why: "kernel update", cause: "once-only") { __typename } }`);
  const { data } = await gateway.gql(`{ repeatedCauses { cause count firstAt lastAt } }`);
  const disk = data.repeatedCauses.find((c: any) => c.cause === 'disk-full');
  expect(disk.count).toBe(3);
  expect(disk.firstAt <= disk.lastAt).toBe(true);
  expect(data.repeatedCauses.some((c: any) => c.cause === 'once-only')).toBe(false);
});

describe('bad input gets a clear error, and is counted, never kept (issue 35)', () => {
  test('an unknown verb on NATS', async () => {
    const { body, callId } = await natsCall(nc, 'noSuchVerb', {});
    expect(body).toEqual({ ok: false, error: { code: 'NOT_FOUND', message: `no verb named "${env.controller}.noSuchVerb"` } });
    expect(callId).toBeUndefined();
  });

  test('an unknown argument and a wrong type, on NATS and on GraphQL', async () => {
    const unknown = await natsCall(nc, 'recordHandAct', { act: 'x', why: 'y', colour: 'red' });
    expect(unknown.body.error).toMatchObject({ code: 'INVALID' });
    expect(unknown.body.error.message).toMatch(/takes no argument "colour"/);
    const wrong = await natsCall(nc, 'recordHandAct', { act: 5, why: 'y' });
    expect(wrong.body.error.message).toMatch(/act must be String, got number 5/);
    expect(wrong.callId).toBeUndefined();
    const gql = await gateway.gql(`mutation { recordHandAct(act: 5, why: "y") { __typename } }`);
    expect(gql.errors?.[0]?.message).toMatch(/String cannot represent a non string value: 5/);
  });

  test('a body that is not JSON', async () => {
    const { body, callId } = await natsCall(nc, 'recordHandAct', '{"act": oops');
    expect(body.ok).toBe(false);
    expect(body.error.code).toBe('INVALID');
    expect(body.error.message).toMatch(/not JSON/);
    expect(callId).toBeUndefined();
  });

  test('a call id that does not exist, and one that is malformed', async () => {
    const missing = await callById('0000000000000000000');
    expect(missing.data.call).toBeNull();
    expect(missing.errors?.[0]).toMatchObject({ message: 'no call named "0000000000000000000"', extensions: { code: 'NOT_FOUND' } });
    const malformed = await callById('../etc');
    expect(malformed.errors?.[0]?.extensions?.code).toBe('INVALID');
    const nats = await natsCall(nc, 'call', { id: '0000000000000000000' });
    expect(nats.body.error.code).toBe('NOT_FOUND');
  });
});

test('a 200 KiB answer is kept as 64 KiB, marked truncated, with its full size', async () => {
  const big = 'x'.repeat(200 * 1024);
  const sub = nc.subscribe(`${env.subjects}.seat.queue.depth`, {
    callback: (_err, msg) => {
      msg.respond(JSON.stringify({ ok: true, answer: big }));
    },
  });
  await nc.flush();
  try {
    const { data } = await gateway.gql(`mutation { callVerb(seat: "queue", verb: "depth", args: {queue: "q1"}) {
      ... on MutationCallVerbSuccess { data { ${CALL_FIELDS} } } } }`);
    const call = data.callVerb.data;
    expect(call).toMatchObject({ seat: 'queue', verb: 'depth', state: 'OK', answerTruncated: true, answerBytes: big.length + 2, answerJson: null });
    expect(Buffer.byteLength(call.answer)).toBe(64 * 1024);
    expect(call.answer.startsWith('"xxxx')).toBe(true);
    const again = (await callById(call.id)).data.call;
    expect(again).toMatchObject({ answerTruncated: true, answerBytes: big.length + 2 });
    expect(again.answer).toBe(call.answer);
  } finally {
    sub.unsubscribe();
  }
});

test(`a caller's ${CALLS_KEPT_PER_CALLER + 1}st kept call pushes out its own oldest, never another caller's (issue 35)`, async () => {
  const jsm = await jetstreamManager(nc);
  const stream = `KV_${env.controller}_calls`;
  const callsPage = async (filter: string) =>
    (await gateway.gql(`{ calls(first: 100${filter}) { edges { node { id caller } } pageInfo { hasNextPage } } }`)).data.calls;
  const mineNow = async () => {
    const p = await callsPage(', caller: "tester"');
    return { ids: p.edges.map((e: any) => e.node.id as string), more: p.pageInfo.hasNextPage as boolean };
  };
  const others = async () => (await callsPage('')).edges.filter((e: any) => e.node.caller !== 'tester').map((e: any) => e.node.id as string);
  // Fill this caller's share.
  for (let kept = (await mineNow()).ids.length; kept < CALLS_KEPT_PER_CALLER; kept = (await mineNow()).ids.length) {
    await Promise.all(
      Array.from({ length: Math.min(CALLS_KEPT_PER_CALLER - kept, 50) }, () => natsCall(nc, 'recordHandAct', { act: 'fill', why: 'filling the share' })),
    );
  }
  const othersBefore = (await others()).sort();
  const messagesBefore = (await jsm.streams.info(stream)).state.messages;
  const full = await mineNow();
  expect(full).toMatchObject({ more: false });
  const oldest = full.ids.at(-1)!;
  expect((await callById(oldest)).data.call.id).toBe(oldest);

  const { callId: newest } = await natsCall(nc, 'recordHandAct', { act: 'newest', why: 'one over the share' });
  const after = await mineNow();
  expect(after.ids).toHaveLength(CALLS_KEPT_PER_CALLER);
  expect(after.more).toBe(false);
  expect(after.ids[0]).toBe(newest);
  // The one pushed out is this caller's own, of its oldest: the first 50 were sent at once, so
  // which of them is oldest is the order they were recorded in, not always the listing's last.
  const gone = full.ids.filter((id: string) => !after.ids.includes(id));
  expect(gone).toHaveLength(1);
  expect(full.ids.slice(-50)).toContain(gone[0]);
  expect((await callById(gone[0]!)).errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  expect((await callById(newest!)).data.call.state).toBe('OK');
  expect((await others()).sort()).toEqual(othersBefore);
  // One in, one out: what was taken out left no delete marker to count against the bucket's 1,000.
  expect((await jsm.streams.info(stream)).state.messages).toBe(messagesBefore);
  const info = await jsm.streams.info(stream);
  expect(info.config).toMatchObject({ max_msgs: 1000, discard: 'old', max_msgs_per_subject: 1, max_age: 14 * 24 * 3600 * 1e9 });

  // The list is read from memory, mirrors the bucket, and pages newest first by cursor.
  const { data: page } = await gateway.gql(`{ calls(first: 3) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }`);
  expect(page.calls.edges[0].node.id).toBe(newest);
  expect(page.calls.pageInfo.hasNextPage).toBe(true);
  const { data: next } = await gateway.gql(`query($after: String) { calls(first: 2, after: $after) { edges { node { id } } } }`, {
    after: page.calls.pageInfo.endCursor,
  });
  expect(next.calls.edges).toHaveLength(2);
  expect(next.calls.edges[0].node.id < page.calls.edges[2].node.id).toBe(true);
  const { data: all } = await gateway.gql(`{ calls(first: 100, seat: "nope") { edges { node { id } } } }`);
  expect(all.calls.edges).toEqual([]);
}, 120_000);

describe('a NATS body over 1 MiB', () => {
  let server: NatsServer;
  let big: ChildGateway;
  let own: TestEnv;
  beforeAll(async () => {
    // The machine's NATS carries at most 1 MiB, so a larger body never reaches the responder there:
    // a server of its own that carries 4 MiB shows the gateway refusing it.
    server = await startNatsServer({ confText: 'max_payload: 4MB\n' });
    own = await testEnv('calls_big');
    big = await spawnGateway({ ...own.env, NATS_URL: server.url });
  });
  afterAll(async () => {
    await big?.stop();
    await own?.database.drop();
    await server?.stop();
  });

  test('is refused with a clear error, not kept, and the gateway keeps serving', async () => {
    const conn = await connect({ servers: server.url });
    try {
      const body = JSON.stringify({ act: 'x', why: 'y'.repeat(1024 * 1024) });
      const reply = await conn.request(`${own.subjects}.seat.${own.controller}.recordHandAct.tester`, body, { timeout: 10_000 });
      const answer = reply.json<any>();
      expect(answer).toEqual({ ok: false, error: { code: 'INVALID', message: `the request body is ${body.length} bytes; at most 1048576` } });
      expect(reply.headers?.get('Mesh-Call')).toBeFalsy();
      const ok = await conn.request(`${own.subjects}.seat.${own.controller}.repeatedCauses`, '', { timeout: 10_000 });
      expect(ok.json()).toEqual({ ok: true, answer: [] });
    } finally {
      await conn.close();
    }
  });
});

import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { startGateway } from '../../../src/gateway.js';
import { publishComposition } from '../../../src/services/status/replicating/encode.js';
import { natsCall as callOverNats } from '../../fixtures/calls.js';
import { aComposition } from '../../fixtures/compositions.js';
import { useGateway } from '../../fixtures/gateway.js';
import { anAgent, eventually } from '../../fixtures/live.js';
import { logInto } from '../../fixtures/log.js';
import { aTokensFile, startTestGateway, type TestGateway, testEnv } from '../../fixtures/services.js';

// What an operator sees must be true: status follows time, reads do not evict the audit trail,
// a forwarded act keeps its actor, a rename does not cut a seat's holders off.

const { gw: gateway, env } = useGateway('truth', { env: () => ({ MESH_HEARTBEAT_S: String(HEARTBEAT_S) }) });
let nc: NatsConnection;
const HEARTBEAT_S = 0.4;

beforeAll(async () => {
  nc = await connect({ servers: env.env.NATS_URL, inboxPrefix: '_INBOX.poller' });
  await eventually(() => gateway.mesh.status.current(), 'the first composition');
});
afterAll(async () => {
  await nc?.close();
});

const natsCall = (verb: string, body: unknown = {}) => callOverNats(nc, env, verb, body, { user: 'poller', timeoutMs: 5_000 });

const stateIn = (machine: string) => gateway.mesh.status.current()?.machines.find((m) => m.name === machine)?.state;

test('a machine that falls silent turns LATE, then SILENT, in status within a second of each boundary, with no news at all', async () => {
  const agent = await anAgent(env.env.NATS_URL);
  const started = Date.now();
  agent.heartbeat(env.subjects, 'quiet-1', { site: 'eu-1', modules: ['broker'] });
  await agent.close();
  await eventually(() => stateIn('quiet-1') === 'UP', 'quiet-1 UP in status');
  // LATE past 1.5 intervals (0.6 s), SILENT past 6 (2.4 s); the minute's composition is far off.
  await eventually(() => stateIn('quiet-1') === 'LATE', 'quiet-1 LATE in status', 1.5 * HEARTBEAT_S * 1000 + 1_000);
  // Not before the boundary either: the heartbeat was sent after `started`, so each state is seen at least that long after it.
  expect(Date.now() - started).toBeGreaterThanOrEqual(1.5 * HEARTBEAT_S * 1000);
  await eventually(() => stateIn('quiet-1') === 'SILENT', 'quiet-1 SILENT in status', 6 * HEARTBEAT_S * 1000 + 1_000 - (Date.now() - started));
  expect(Date.now() - started).toBeGreaterThanOrEqual(6 * HEARTBEAT_S * 1000);
  expect(gateway.mesh.status.current()!.trigger).toContain('state-change');
});

test('reading verbs over NATS are not kept as calls, so polling them pushes no acting call out of the bucket', async () => {
  const acted = await natsCall('recordHandAct', { act: 'probe', why: 'an acting call to keep' });
  expect(acted.callId).toBeTruthy();
  const before = gateway.mesh.views.calls.values().length;
  for (let i = 0; i < 30; i++) {
    const read = await natsCall(i % 2 ? 'plans' : 'repeatedCauses');
    expect(read.body.ok).toBe(true);
    expect(read.callId).toBeUndefined();
  }
  expect(gateway.mesh.views.calls.values().length).toBe(before);
  const { data } = await gateway.gql(`{ calls(caller: "poller") { edges { node { verb } } } }`);
  expect(data.calls.edges.map((e: any) => e.node.verb)).toEqual(['recordHandAct']);
});

test('calls can be filtered by verb', async () => {
  await natsCall('recordHandAct', { act: 'filtered', why: 'one more' });
  const { data } = await gateway.gql(`{ calls(verb: "recordHandAct") { edges { node { verb } } } }`);
  expect(data.calls.edges.length).toBeGreaterThanOrEqual(2);
  expect(new Set(data.calls.edges.map((e: any) => e.node.verb))).toEqual(new Set(['recordHandAct']));
  expect((await gateway.gql(`{ calls(verb: "noSuchVerb") { edges { node { id } } } }`)).data.calls.edges).toEqual([]);
});

test("callVerb to the controller's own seat keeps who acted: the hand-act's actor is the caller, the inner call names the outer one", async () => {
  const tokens = aTokensFile([{ name: 'ops', scopes: ['read', 'act', 'admin'], token: 'ops-secret' }]);
  const own = await testEnv('truthtok');
  const guarded = await startTestGateway({ ...own.env, MESH_TOKENS_FILE: tokens.path });
  try {
    const auth = { authorization: 'Bearer ops-secret' };
    const r = await guarded.gql(
      `mutation { callVerb(seat: "${own.controller}", verb: "recordHandAct", args: {act: "restarted-broker", why: "stuck consumer"}) {
        ... on MutationCallVerbSuccess { data { id state caller answerJson } } ... on Error { code message } } }`,
      undefined,
      auth,
    );
    const outer = r.data.callVerb.data;
    expect(outer).toMatchObject({ state: 'OK', caller: 'ops' });
    expect(outer.answerJson).toMatchObject({ actor: 'ops', act: 'restarted-broker' });
    const inner = (await guarded.gql(`query($id: ID!) { call(id: $id) { caller outerCallId verb } }`, { id: outer.answerJson.callId }, auth)).data.call;
    expect(inner).toEqual({ caller: 'ops', outerCallId: outer.id, verb: 'recordHandAct' });
  } finally {
    await guarded.stop();
    await own.cleanup();
    tokens.remove();
  }
});

test('after a rename, a call to the seat still reaches holders that listen on its old name', async () => {
  const sub = nc.subscribe(`${env.subjects}.seat.queue.depth`, {
    callback: (_err, msg) => {
      msg.respond(JSON.stringify({ ok: true, answer: { depth: 7 } }));
    },
  });
  await nc.flush();
  try {
    const renamed = await gateway.gql(`mutation { renameSeat(from: "queue", to: "work-queue") { __typename } }`);
    expect(renamed.data.renameSeat.__typename).toBe('MutationRenameSeatSuccess');
    for (const seat of ['work-queue', 'queue']) {
      const r = await gateway.gql(`mutation { callVerb(seat: "${seat}", verb: "depth", args: {queue: "orders"}) {
        ... on MutationCallVerbSuccess { data { seat state answerJson errorCode } } } }`);
      expect(r.data.callVerb.data).toEqual({ seat: 'work-queue', state: 'OK', answerJson: { depth: 7 }, errorCode: null });
    }
  } finally {
    sub.unsubscribe();
  }
});

test("the controller's own seat is held by the serving replica, never listed unheld", async () => {
  await gateway.gql(`mutation { recordHandAct(act: "nudge", why: "ask for a composition") { __typename } }`);
  const { data } = await gateway.gql(`{ status { unheldSeats seats { name held holders { machine module derived } } } }`);
  expect(data.status.unheldSeats).not.toContain(env.controller);
  expect(data.status.seats.find((s: any) => s.name === env.controller)).toEqual({
    name: env.controller,
    held: true,
    holders: [{ machine: gateway.config.replica, module: 'mesh-gateway', derived: true }],
  });
});

test('a composition of another controller on the same subjects is ignored and counted, and names its controller', async () => {
  const ours = gateway.mesh.status.current()!;
  expect(ours.controller).toBe(env.controller);
  // Another controller's replicas have a key of their own: its composition is refused by the seal, and counted there.
  const ignored = () => gateway.mesh.status.foreignIgnored() + gateway.mesh.statusSeal.refusedTotal();
  const before = ignored();
  await publishComposition(nc, `${env.subjects}.status`, { ...aComposition(ours.seq + 1000, 3), controller: 'someone-else' });
  await eventually(() => ignored() > before, 'the foreign composition counted');
  expect(gateway.mesh.status.current()!.controller).toBe(env.controller);
  expect(gateway.mesh.status.current()!.seq).toBeLessThan(ours.seq + 1000);
  expect((await gateway.gql('{ status { controller } }')).data.status.controller).toBe(env.controller);
});

describe('the gateway’s own downtime', () => {
  test('is not recorded as machines’ lateness: a gap spanning a time no replica ran is left out', async () => {
    const own = await testEnv('downtime');
    const ownEnv = { ...own.env, MESH_HEARTBEAT_S: '0.2' };
    let first: TestGateway | undefined = await startTestGateway(ownEnv);
    let second: TestGateway | undefined;
    const agent = await anAgent(own.env.NATS_URL);
    try {
      agent.heartbeat(own.subjects, 'steady-1', { modules: ['broker'] });
      await first.news.flush();
      await eventually(async () => (await first!.mesh.db.selectFrom('machine').select('name').execute()).length === 1, 'steady-1 heard');
      await first.stop();
      first = undefined;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      second = await startTestGateway(ownEnv);
      agent.heartbeat(own.subjects, 'steady-1', { modules: ['broker'] });
      await eventually(async () => {
        await second!.news.flush();
        const row = await second!.mesh.db.selectFrom('machine').select('heartbeats').executeTakeFirst();
        return Number(row?.heartbeats) === 2;
      }, 'the beat after the restart heard');
      const gaps = () => second!.mesh.db.selectFrom('duration').select('seconds').where('kind', '=', 'heartbeat_gap').execute();
      expect(await gaps()).toEqual([]);
      // A gap while the gateway runs is the machine's own, and is recorded.
      await new Promise((resolve) => setTimeout(resolve, 500));
      agent.heartbeat(own.subjects, 'steady-1', { modules: ['broker'] });
      await eventually(async () => {
        await second!.news.flush();
        return (await gaps()).length === 1;
      }, 'a late beat while running recorded');
    } finally {
      await agent.close();
      await first?.stop();
      await second?.stop();
      await own.cleanup();
    }
  });
});

test("a client's bad input is logged at info without a stack; it is not a server fault", async () => {
  const own = await testEnv('logs');
  const logged: Record<string, unknown>[] = [];
  const gw = await startGateway(loadConfig(own.env), { logger: logInto(logged, 'info') });
  try {
    const response = await fetch(gw.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ call(id: "../etc") { id } }' }),
    });
    expect(((await response.json()) as any).errors[0].extensions.code).toBe('INVALID');
    await eventually(() => logged.find((l) => l.msg === 'request refused'), 'the refusal logged');
    expect(logged.find((l) => l.msg === 'request refused')).toMatchObject({ level: 30, code: 'INVALID', path: ['call'] });
    expect(logged.filter((l) => (l.level as number) >= 50)).toEqual([]);
  } finally {
    await gw.stop();
    await own.cleanup();
  }
});

test('a second controller on the same MESH_SUBJECTS is refused at start, naming MESH_SUBJECTS', async () => {
  const other = await testEnv('truth2');
  try {
    await expect(startTestGateway({ ...other.env, MESH_SUBJECTS: env.subjects })).rejects.toThrow(
      new RegExp(`is another controller running on MESH_SUBJECTS=${env.subjects}\\? Each controller needs its own MESH_SUBJECTS`),
    );
  } finally {
    await other.cleanup();
  }
});

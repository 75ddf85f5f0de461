import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type ChildGateway, spawnGateway } from '../../fixtures/child.js';
import { type NatsServer, startNatsServer } from '../../fixtures/nats-server.js';
import { freshDatabase } from '../../fixtures/services.js';

// The shipped config is written for the default names, and this server is the test's own.
const CONF = fileURLToPath(new URL('../../../docs/nats-account.conf', import.meta.url));
const CONTROLLER = 'mesh-controller';
// nats-server parses a variable's value as a config value: one starting with a digit fails to parse.
const password = () => `pw${randomBytes(12).toString('hex')}`;
const passwords = { controller: password(), alice: password(), m1: password() };
/** Bursts of 2,000 heartbeats sent until one is seen pending (each is written within a second or two). */
const PENDING_BURSTS = 20;

let server: NatsServer;
let database: Awaited<ReturnType<typeof freshDatabase>>;
let gatewayEnv: Record<string, string>;
const children: ChildGateway[] = [];

beforeAll(async () => {
  server = await startNatsServer({
    conf: CONF,
    env: {
      MESH_CONTROLLER_NATS_PASSWORD: passwords.controller,
      MESH_AGENT_ALICE_NATS_PASSWORD: passwords.alice,
      MESH_AGENT_M1_NATS_PASSWORD: passwords.m1,
    },
    probe: { user: CONTROLLER, pass: passwords.controller },
  });
  database = await freshDatabase('account');
  gatewayEnv = {
    DATABASE_URL: database.url,
    NATS_URL: server.url,
    NATS_USER: CONTROLLER,
    NATS_PASSWORD: passwords.controller,
    MESH_CONTROLLER: CONTROLLER,
    MESH_SUBJECTS: 'mesh',
    PORT: '0',
  };
});
afterAll(async () => {
  for (const child of children) await child.kill();
  await database?.drop();
  await server?.stop();
});

async function start(): Promise<ChildGateway> {
  const child = await spawnGateway(gatewayEnv);
  children.push(child);
  return child;
}

const violations = (user: string) =>
  server
    .log()
    .split('\n')
    .filter((line) => line.includes('Violation') && line.includes(`User "${user}"`));

/** Connects as a user and collects the permission errors the server sends it. */
async function as(user: string, pass: string, inboxPrefix?: string): Promise<{ nc: NatsConnection; errors: string[] }> {
  const nc = await connect({ servers: server.url, user, pass, inboxPrefix });
  const errors: string[] = [];
  (async () => {
    for await (const status of nc.status()) if (status.type === 'error') errors.push(String((status as { error?: Error }).error?.message));
  })().catch(() => undefined);
  return { nc, errors };
}

test('the gateway runs under the least-privilege user through a call, a hand-act and a restart', async () => {
  const first = await start();
  const act = (
    await first.gql(`mutation { recordHandAct(act: "rotated-creds", why: "quarterly rotation", cause: "policy") {
    ... on MutationRecordHandActSuccess { data { id callId } } } }`)
  ).data.recordHandAct.data;
  expect(act.callId).toBeTruthy();

  const { nc: alice } = await as('alice', passwords.alice, '_INBOX.alice');
  const reply = await alice.request(`mesh.seat.${CONTROLLER}.handActs`, JSON.stringify({ cause: 'policy' }), { timeout: 5_000 });
  expect(reply.json()).toMatchObject({ ok: true, answer: { handActs: [{ id: act.id, why: 'quarterly rotation' }] } });
  expect(reply.headers?.get('Mesh-Call')).toBeUndefined(); // a read is not kept
  const acted = await alice.request(`mesh.seat.${CONTROLLER}.recordHandAct.alice`, JSON.stringify({ act: 'drained-node', why: 'kernel update' }), {
    timeout: 5_000,
  });
  const aliceAct = acted.json<any>().answer;
  const natsCallId = acted.headers?.get('Mesh-Call');
  // Its news goes through the news stream and its consumer, under the controller's grant.
  alice.publish('mesh.news.machine.alice', JSON.stringify({ kind: 'heartbeat', modules: ['broker'] }));
  await alice.flush();
  await expect.poll(async () => (await first.gql(`{ machine(name: "alice") { heartbeats } }`)).data?.machine?.heartbeats, { timeout: 10_000 }).toBe(1);
  // While news is pending, how far it is written is read off the oldest message not yet
  // acknowledged. A read refused by the grant leaves mesh_news_pending at its last good value, 0.
  const pendingSeen = async () => {
    const text = await (await fetch(new URL('/metrics', first.url))).text();
    return Number(/^mesh_news_pending(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? 0);
  };
  let pending = 0;
  for (let burst = 0; burst < PENDING_BURSTS && pending === 0; burst++) {
    for (let i = 0; i < 2_000; i++) alice.publish('mesh.news.machine.alice', JSON.stringify({ kind: 'heartbeat', modules: ['broker'] }));
    await alice.flush();
    for (let read = 0; read < 10 && pending === 0; read++) {
      pending = await pendingSeen();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  expect(pending, 'a read of how far the news is written while news was pending').toBeGreaterThan(0);
  await alice.close();

  await first.kill();
  const second = await start();
  const call = (await second.gql(`query($id: ID!) { call(id: $id) { state verb caller answerJson } }`, { id: act.callId })).data.call;
  expect(call).toMatchObject({ state: 'OK', verb: 'recordHandAct', caller: 'local', answerJson: { id: act.id } });
  const natsCall = (await second.gql(`query($id: ID!) { call(id: $id) { state caller door } }`, { id: natsCallId })).data.call;
  expect(natsCall).toEqual({ state: 'OK', caller: 'alice', door: 'NATS' });
  const acts = (await second.gql(`{ handActs { edges { node { id } } } }`)).data.handActs.edges;
  expect(acts.map((e: any) => e.node.id)).toEqual([aliceAct.id, act.id]);
  // Nothing the gateway did, across both processes, needed a subject outside its grant.
  expect(violations(CONTROLLER)).toEqual([]);
  await second.stop();
  expect(violations(CONTROLLER)).toEqual([]);
}, 120_000);

test('a subject outside the grant is refused, for the controller and for an agent', async () => {
  const controller = await as(CONTROLLER, passwords.controller, `_INBOX.${CONTROLLER}`);
  controller.nc.publish('$KV.other-controller_calls.x', 'forged');
  controller.nc.publish('mesh.news.machine.m1', '{"kind":"heartbeat"}');
  const spy = controller.nc.subscribe('_INBOX.alice.>');
  await controller.nc.flush();
  await expect(spy.closed).resolves.toMatchObject({ message: 'Permissions Violation for Subscription to "_INBOX.alice.>"' });
  await expect.poll(() => controller.errors.length).toBeGreaterThanOrEqual(3);
  expect(controller.errors).toEqual(
    expect.arrayContaining([
      'Permissions Violation for Publish to "$KV.other-controller_calls.x"',
      'Permissions Violation for Publish to "mesh.news.machine.m1"',
    ]),
  );
  await controller.nc.close();

  const alice = await as('alice', passwords.alice, '_INBOX.alice');
  const eavesdrop = alice.nc.subscribe('_INBOX.bob.>');
  alice.nc.publish(`$KV.${CONTROLLER}_calls.0000000000000000000`, 'forged');
  await expect(alice.nc.request(`$JS.API.STREAM.INFO.KV_${CONTROLLER}_calls`, '', { timeout: 2_000 })).rejects.toThrow(/Permissions Violation for Publish/);
  await expect(eavesdrop.closed).resolves.toMatchObject({ message: 'Permissions Violation for Subscription to "_INBOX.bob.>"' });
  await expect.poll(() => alice.errors).toEqual(expect.arrayContaining([`Permissions Violation for Publish to "$KV.${CONTROLLER}_calls.0000000000000000000"`]));
  await alice.nc.close();

  // An agent that does not name itself in its inbox cannot hear an answer at all.
  const anonymous = await as('alice', passwords.alice);
  await expect(anonymous.nc.request(`mesh.seat.${CONTROLLER}.handActs`, '{}', { timeout: 2_000 })).rejects.toThrow(
    /Permissions Violation for Subscription to "_INBOX\./,
  );
  await anonymous.nc.close();
  await expect.poll(() => violations('alice').length).toBeGreaterThanOrEqual(4);
});

test('an agent under the shipped account runs no controller verb, named or unnamed; a tool is refused admin verbs (issue 20, finding 2)', async () => {
  const gateway = await start();
  const m1 = await as('m1', passwords.m1);
  for (const subject of [`mesh.seat.${CONTROLLER}.retireSeat.m1`, `mesh.seat.${CONTROLLER}.push.m1`, `mesh.seat.${CONTROLLER}.calls`]) {
    m1.nc.publish(subject, JSON.stringify({ seat: 'builder', why: 'as an agent' }), { reply: '_INBOX.m1.x' });
  }
  await m1.nc.flush();
  await expect
    .poll(() => m1.errors, { timeout: 10_000 })
    .toEqual(
      expect.arrayContaining(
        [`mesh.seat.${CONTROLLER}.retireSeat.m1`, `mesh.seat.${CONTROLLER}.push.m1`, `mesh.seat.${CONTROLLER}.calls`].map(
          (subject) => `Permissions Violation for Publish to "${subject}"`,
        ),
      ),
    );
  await m1.nc.close();

  // A tool acts under its name, but without MESH_NATS_USERS_FILE it has read and act, never admin.
  const alice = await as('alice', passwords.alice, '_INBOX.alice');
  const refused = await alice.nc.request(`mesh.seat.${CONTROLLER}.retireSeat.alice`, JSON.stringify({ seat: 'builder', why: 'as a tool' }), { timeout: 5_000 });
  expect(refused.json()).toEqual({ ok: false, error: { code: 'FORBIDDEN', message: 'alice may not run retireSeat: it needs the admin scope' } });
  await alice.nc.close();
  expect((await gateway.gql(`{ seat(name: "builder") { name } }`)).data.seat).toEqual({ name: 'builder' });
  await gateway.stop();
}, 60_000);

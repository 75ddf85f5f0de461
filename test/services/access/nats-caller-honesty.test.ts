import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type ChildGateway, spawnGateway } from '../../fixtures/child.js';
import { type NatsServer, startNatsServer } from '../../fixtures/nats-server.js';
import { freshDatabase } from '../../fixtures/services.js';

// Under the shipped least-privilege account (docs/nats-account.conf), on a nats-server of this test's own.
const CONF = fileURLToPath(new URL('../../../docs/nats-account.conf', import.meta.url));
const CONTROLLER = 'mesh-controller';
const password = () => `pw${randomBytes(12).toString('hex')}`;
const passwords = { controller: password(), alice: password(), m1: password() };

let server: NatsServer;
let database: Awaited<ReturnType<typeof freshDatabase>>;
let gateway: ChildGateway;

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
  database = await freshDatabase('honest');
  gateway = await spawnGateway({
    DATABASE_URL: database.url,
    NATS_URL: server.url,
    NATS_USER: CONTROLLER,
    NATS_PASSWORD: passwords.controller,
    MESH_CONTROLLER: CONTROLLER,
    MESH_SUBJECTS: 'mesh',
    PORT: '0',
  });
}, 90_000);
afterAll(async () => {
  await gateway?.kill();
  await database?.drop();
  await server?.stop();
});

async function as(user: keyof typeof passwords | 'mesh-controller', inboxPrefix: string): Promise<{ nc: NatsConnection; errors: string[] }> {
  const pass = user === CONTROLLER ? passwords.controller : passwords[user as keyof typeof passwords];
  const nc = await connect({ servers: server.url, user, pass, inboxPrefix });
  const errors: string[] = [];
  (async () => {
    for await (const status of nc.status()) if (status.type === 'error') errors.push(String((status as { error?: Error }).error?.message));
  })().catch(() => undefined);
  return { nc, errors };
}

const CALL = 'id verb caller state errorCode error outerCallId';
const callsOf = async (filter: string) => (await gateway.gql(`{ calls(${filter}) { edges { node { ${CALL} } } } }`)).data.calls.edges.map((e: any) => e.node);
const actsBy = async (actor: string) =>
  (await gateway.gql(`{ handActs(actor: "${actor}") { edges { node { actor act callId } } } }`)).data.handActs.edges.map((e: any) => e.node);

test('an acting verb over NATS is recorded under the user the account lets publish its subject; a forged inbox or name acts for nobody', async () => {
  const alice = await as('alice', '_INBOX.alice');
  // Her own act, on her own subject: named alice, whatever caller headers she adds.
  const forgedHeaders = headers();
  forgedHeaders.set('Mesh-Caller', 'ops');
  forgedHeaders.set('Mesh-Outer-Call', '0mx3eakrpc00c7140c7');
  const own = await alice.nc.request(`mesh.seat.${CONTROLLER}.recordHandAct.alice`, JSON.stringify({ act: 'drained-node', why: 'kernel update' }), {
    timeout: 5_000,
    headers: forgedHeaders,
  });
  expect(own.json()).toMatchObject({ ok: true, answer: { actor: 'alice', act: 'drained-node' } });
  expect((await callsOf('caller: "alice"'))[0]).toMatchObject({ caller: 'alice', state: 'OK', outerCallId: null });

  // An act on the unnamed subject: refused (counted, not kept), and nothing acted in anyone's name.
  const unnamed = await alice.nc.request(`mesh.seat.${CONTROLLER}.recordHandAct`, JSON.stringify({ act: 'forged-act', why: 'as bob' }), { timeout: 5_000 });
  expect(unnamed.json()).toMatchObject({
    ok: false,
    error: { code: 'FORBIDDEN', message: expect.stringContaining(`mesh.seat.${CONTROLLER}.recordHandAct.<your NATS user>`) },
  });
  expect(unnamed.headers?.get('Mesh-Call')).toBeUndefined();

  // Another user's name, or the controller's, in the subject: the server refuses the publish.
  for (const name of ['bob', CONTROLLER, 'ops']) {
    alice.nc.publish(`mesh.seat.${CONTROLLER}.recordHandAct.${name}`, JSON.stringify({ act: 'forged-act', why: `as ${name}` }), {
      reply: `_INBOX.${name}.x`,
      headers: forgedHeaders,
    });
  }
  await alice.nc.flush();
  await expect
    .poll(() => alice.errors, { timeout: 10_000 })
    .toEqual(
      expect.arrayContaining(['bob', CONTROLLER, 'ops'].map((name) => `Permissions Violation for Publish to "mesh.seat.${CONTROLLER}.recordHandAct.${name}"`)),
    );
  await alice.nc.close();

  for (const name of ['bob', CONTROLLER, 'ops', 'unnamed']) expect(await callsOf(`caller: "${name}"`)).toEqual([]);
  for (const name of ['bob', CONTROLLER, 'ops', 'unnamed']) expect(await actsBy(name)).toEqual([]);
  const acts = (await gateway.gql(`{ handActs(act: "forged-act") { edges { node { id } } } }`)).data.handActs.edges;
  expect(acts).toEqual([]);

  // Reading verbs still answer on the unnamed subject, for any client.
  const reader = await as('alice', '_INBOX.alice');
  const read = await reader.nc.request(`mesh.seat.${CONTROLLER}.handActs`, JSON.stringify({ actor: 'alice' }), { timeout: 5_000 });
  expect(read.json()).toMatchObject({ ok: true, answer: { handActs: [{ actor: 'alice', act: 'drained-node' }] } });
  await reader.nc.close();
}, 60_000);

test("the caller the controller forwards to its own seat is kept, since only the controller may publish on the controller's subject", async () => {
  const outer = (
    await gateway.gql(`mutation { callVerb(seat: "${CONTROLLER}", verb: "recordHandAct", args: { act: "rotated-creds", why: "quarterly" }) {
      ... on MutationCallVerbSuccess { data { id state caller answerJson } } ... on Error { code message } } }`)
  ).data.callVerb;
  expect(outer.data).toMatchObject({ state: 'OK', caller: 'local', answerJson: { actor: 'local', act: 'rotated-creds' } });
  const inner = (await callsOf('caller: "local", verb: "recordHandAct"'))[0];
  expect(inner).toMatchObject({ caller: 'local', state: 'OK', outerCallId: outer.data.id });
  expect(server.log()).not.toMatch(/Violation.*User "mesh-controller"/);
}, 30_000);

test('an agent user answers a verb of the seat its machine holds, and cannot listen on another seat', async () => {
  const m1 = await as('m1', '_INBOX.m1');
  const sub = m1.nc.subscribe('mesh.seat.queue.*', {
    callback: (_err, msg) => {
      msg.respond(JSON.stringify({ ok: true, answer: { depth: 7, asked: msg.subject } }));
    },
  });
  const spy = m1.nc.subscribe('mesh.seat.registry.*');
  const controllerSpy = m1.nc.subscribe(`mesh.seat.${CONTROLLER}.*`);
  await m1.nc.flush();
  await expect(spy.closed).resolves.toMatchObject({ message: 'Permissions Violation for Subscription to "mesh.seat.registry.*"' });
  await expect(controllerSpy.closed).resolves.toMatchObject({ message: `Permissions Violation for Subscription to "mesh.seat.${CONTROLLER}.*"` });

  const called = (
    await gateway.gql(`mutation { callVerb(seat: "queue", verb: "depth", args: { queue: "orders" }, timeoutMs: 5000) {
      ... on MutationCallVerbSuccess { data { state answerJson errorCode } } ... on Error { code message } } }`)
  ).data.callVerb;
  expect(called.data).toEqual({ state: 'OK', answerJson: { depth: 7, asked: 'mesh.seat.queue.depth' }, errorCode: null });

  // A seat m1 does not hold: nobody it could be answers.
  const elsewhere = (
    await gateway.gql(`mutation { callVerb(seat: "registry", verb: "has", args: { build: "b1" }, timeoutMs: 2000) {
      ... on MutationCallVerbSuccess { data { state errorCode } } ... on Error { code message } } }`)
  ).data.callVerb;
  expect(elsewhere.data).toEqual({ state: 'FAILED', errorCode: 'NO_RESPONDERS' });
  sub.unsubscribe();
  await m1.nc.close();
}, 30_000);

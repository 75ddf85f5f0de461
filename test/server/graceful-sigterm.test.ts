import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import WebSocket from 'ws';
import { type ChildGateway, spawnGateway } from '../fixtures/child.js';
import { type TestEnv, testEnv } from '../fixtures/services.js';

let env: TestEnv;
let nc: NatsConnection;
const children: ChildGateway[] = [];
/**
 * The queue seat's holder (this test) holds each depth request's answer until the test releases
 * it: what happens during the drain is ordered by the test, not by a race against a timer.
 */
const IN_FLIGHT = 4;
let heard = 0;
const held: (() => void)[] = [];
const releaseHeld = () => {
  for (const answer of held.splice(0)) answer();
};

beforeAll(async () => {
  env = await testEnv('drain');
  nc = await connect({ servers: env.env.NATS_URL });
  nc.subscribe(`${env.subjects}.seat.queue.depth`, {
    callback: (_err, msg) => {
      heard++;
      held.push(() => {
        // An answer released after this file closed its connection: nobody waits for it then.
        if (!nc.isClosed()) msg.respond(JSON.stringify({ ok: true, answer: { depth: 5 } }));
      });
    },
  });
  await nc.flush();
});
afterAll(async () => {
  for (const child of children) await child.kill();
  await nc?.close();
  await env?.cleanup();
});

async function start(): Promise<ChildGateway> {
  const child = await spawnGateway(env.env);
  children.push(child);
  return child;
}

const CALL_VERB = `mutation { callVerb(seat: "queue", verb: "depth", args: { queue: "orders" }, timeoutMs: 30000) {
  ... on MutationCallVerbSuccess { data { id state } } ... on Error { code message } } }`;

const post = (url: string, query: string) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ query }) });

/** Whether a new graphql-ws socket is let in: the HTTP status of the refusal, or 101 when it opens. */
const socketStatus = (url: string) =>
  new Promise<number>((resolve) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
    ws.once('open', () => {
      ws.close();
      resolve(101);
    });
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.once('error', () => resolve(0));
  });

test('on SIGTERM the gateway reports not ready at once, refuses new operations, lets in-flight requests finish, and exits 0 leaving no call RUNNING or ABANDONED', async () => {
  // A drain long enough that the in-flight calls, held by the test, finish within it however loaded the machine.
  const gateway = await spawnGateway({ ...env.env, MESH_DRAIN_S: '60' });
  children.push(gateway);
  const origin = new URL(gateway.url).origin;
  // Ready once the store answers, NATS is connected and the first composition was heard.
  await expect.poll(async () => (await fetch(`${origin}/ready`)).status, { timeout: 10_000, interval: 50 }).toBe(200);
  const ready = await fetch(`${origin}/ready`);
  expect(await ready.json()).toMatchObject({ ready: true, draining: false });
  expect(await socketStatus(gateway.url)).toBe(101);

  let answered = 0;
  const inFlight = Array.from({ length: IN_FLIGHT }, () => post(gateway.url, CALL_VERB).finally(() => answered++));
  await expect.poll(() => heard, { timeout: 10_000 }).toBe(IN_FLIGHT);
  gateway.child.kill('SIGTERM');

  // Not ready while every in-flight request is still held: at once, before anything in flight finished.
  await expect.poll(async () => (await fetch(`${origin}/ready`)).status, { timeout: 10_000, interval: 20 }).toBe(503);
  const notReady = await fetch(`${origin}/ready`);
  expect(await notReady.json()).toMatchObject({ ready: false, draining: true });
  const refused = await post(gateway.url, '{ calls { edges { node { id } } } }');
  expect(refused.status).toBe(503);
  expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(await socketStatus(gateway.url)).toBe(503);
  expect(answered).toBe(0);

  releaseHeld();
  const answers = await Promise.all(inFlight);
  expect(answers.map((r) => r.status)).toEqual(Array(IN_FLIGHT).fill(200));
  const bodies = await Promise.all(answers.map((r) => r.json()));
  expect(bodies.map((b: any) => b.data.callVerb.data.state)).toEqual(Array(IN_FLIGHT).fill('OK'));
  expect(await gateway.exited).toBe(0);

  // The next process finds every call finished: none left RUNNING, none marked ABANDONED.
  const next = await start();
  const states = (await next.gql(`{ calls(first: 100) { edges { node { id state verb } } } }`)).data.calls.edges.map((e: any) => e.node);
  expect(states.filter((c: any) => c.verb === 'depth')).toHaveLength(IN_FLIGHT);
  expect(states.filter((c: any) => c.state !== 'OK')).toEqual([]);
  expect(new Set(states.map((c: any) => c.id))).toEqual(new Set(bodies.map((b: any) => b.data.callVerb.data.id)));
  await next.stop();
}, 90_000);

test('the drain lasts at most MESH_DRAIN_S: past it the gateway closes and exits 0, and the cut call is marked at the next start', async () => {
  const gateway = await spawnGateway({ ...env.env, MESH_DRAIN_S: '1' });
  children.push(gateway);
  const before = heard;
  // Its answer is held until after the gateway exits: the call outlives any drain.
  const slow = post(gateway.url, CALL_VERB.replace('"orders"', '"slow"')).catch((error: Error) => error);
  await expect.poll(() => heard, { timeout: 10_000 }).toBe(before + 1);
  const signalledAt = Date.now();
  gateway.child.kill('SIGTERM');
  expect(await gateway.exited).toBe(0);
  expect(Date.now() - signalledAt).toBeGreaterThanOrEqual(1_000); // it waited out the drain
  expect(await slow).toBeInstanceOf(Error); // the request was cut: it outlived the drain
  releaseHeld();
  const next = await start();
  const cut = (await next.gql(`{ calls(state: ABANDONED) { edges { node { verb errorCode } } } }`)).data.calls.edges.map((e: any) => e.node);
  expect(cut).toEqual([{ verb: 'depth', errorCode: 'ABANDONED' }]);
  await next.stop();
}, 90_000);

test('MESH_DRAIN_S that is not a number of seconds is refused at start, naming the variable', async () => {
  await expect(spawnGateway({ ...env.env, MESH_DRAIN_S: 'soon' }, 20_000)).rejects.toThrow(/MESH_DRAIN_S must be a number ≥ 0, got "soon"/);
});

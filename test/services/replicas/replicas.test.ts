import { afterAll, beforeAll, expect, test } from 'vitest';
import { LEASE_REFRESH_MS, LEASE_TTL_MS } from '../../../src/services/replicas/leases.js';
import { type ChildGateway, spawnGateway } from '../../fixtures/child.js';
import { anAgent, eventually, type Received, sseSubscribe, wsSubscribe } from '../../fixtures/live.js';
import { type TestEnv, testEnv } from '../../fixtures/services.js';

let env: TestEnv;
let a: ChildGateway | undefined;
let b: ChildGateway | undefined;
let agent: Awaited<ReturnType<typeof anAgent>>;
const subscriptions: Received<unknown>[] = [];

const TOOK_LEASE = 'took the serving lease';
const SUBSCRIPTION = 'subscription { status { seq trigger machines { name } } }';
type StatusEvent = { status: { seq: number; trigger: string; machines: { name: string }[] } };

beforeAll(async () => {
  env = await testEnv('replicas');
  agent = await anAgent();
});
afterAll(async () => {
  for (const s of subscriptions) s.close();
  await a?.kill('SIGKILL');
  await b?.kill('SIGTERM');
  await agent?.close();
  await env?.cleanup();
}, 30_000);

const withMachine = (events: StatusEvent[], machine: string) => events.find((e) => e.status.machines.some((m) => m.name === machine));

test('two gateways on one store and one NATS: one composes for both; killed, the other takes the serving lease and composes on', async () => {
  const childEnv = { ...env.env, LOG_LEVEL: 'info' };
  a = await spawnGateway(childEnv);
  await eventually(() => a!.output().includes(TOOK_LEASE), 'the first gateway to take the serving lease', 15_000);
  b = await spawnGateway(childEnv);

  const onA = wsSubscribe<StatusEvent>(a.url, SUBSCRIPTION);
  const onB = sseSubscribe<StatusEvent>(b.url, SUBSCRIPTION);
  const wsOnB = wsSubscribe<StatusEvent>(b.url, SUBSCRIPTION);
  subscriptions.push(onA, onB, wsOnB);
  await onA.atLeast(1);
  await onB.atLeast(1);
  await wsOnB.atLeast(1);

  // News heard by either replica (a queue group) is composed by the serving one and seen on both.
  agent.heartbeat(env.subjects, 'r-1', { site: 'eu-1', modules: ['broker'] });
  const seenOnA = await eventually(() => withMachine(onA.items, 'r-1'), 'r-1 in a composition on the first gateway');
  const seenOnB = await eventually(() => withMachine(onB.items, 'r-1'), 'r-1 in a composition on the second gateway');
  expect(seenOnB.status.seq).toBe(seenOnA.status.seq);
  await eventually(() => withMachine(wsOnB.items, 'r-1'), 'r-1 over graphql-ws on the second gateway');
  expect(b.output()).not.toContain(TOOK_LEASE);

  const lastSeq = Math.max(...onB.items.map((e) => e.status.seq));
  onA.close();
  a.child.kill('SIGKILL');
  await a.exited;
  // Within about LEASE_TTL_MS on a quiet machine; a loaded one is given far longer: the takeover is
  // what is asserted, its speed belongs to the benches.
  await eventually(() => b!.output().includes(TOOK_LEASE), 'the second gateway to take the serving lease', LEASE_TTL_MS + 3 * LEASE_REFRESH_MS + 10_000, 100);

  const takeover = await eventually(() => onB.items.find((e) => e.status.seq > lastSeq), 'a composition by the second gateway');
  expect(takeover.status.trigger).toMatch(/takeover/);

  agent.heartbeat(env.subjects, 'r-2', { site: 'eu-1', modules: ['broker'] });
  const after = await eventually(() => withMachine(onB.items, 'r-2'), 'r-2 composed by the second gateway');
  expect(after.status.seq).toBeGreaterThan(takeover.status.seq);
  const { data } = await (
    await fetch(b.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ status { seq } }' }) })
  ).json();
  expect(data.status.seq).toBeGreaterThanOrEqual(after.status.seq);
}, 60_000);

import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { newId as newCallId } from '../../src/kernel/ids.js';
import { abandonCall, type Call } from '../../src/services/calls/records.js';
import { LEASE_REFRESH_MS, LEASE_TTL_MS } from '../../src/services/replicas/leases.js';
import { type ChildGateway, spawnGateway } from '../fixtures/child.js';
import { eventually } from '../fixtures/live.js';
import { startTestGateway, type TestEnv, type TestGateway, testEnv } from '../fixtures/services.js';

let env: TestEnv;
let nc: NatsConnection;
const children: ChildGateway[] = [];
const inProcess: TestGateway[] = [];

beforeAll(async () => {
  env = await testEnv('restart');
  nc = await connect({ servers: env.env.NATS_URL });
  // A holder of seat queue that hears depth calls and never answers: a call to it stays RUNNING.
  nc.subscribe(`${env.subjects}.seat.queue.depth`, { callback: () => undefined });
  await nc.flush();
});
afterAll(async () => {
  for (const child of children) await child.kill();
  for (const gateway of inProcess) await gateway.stop();
  await nc?.close();
  await env?.cleanup();
});

async function start(extra: Record<string, string> = {}): Promise<ChildGateway> {
  const child = await spawnGateway({ ...env.env, ...extra });
  children.push(child);
  return child;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const readCall = async (gateway: ChildGateway, id: string) =>
  (await gateway.gql(`query($id: ID!) { call(id: $id) { id state answerJson error errorCode replica verb seat } }`, { id })).data?.call;

/** Starts a callVerb that will not be answered and resolves with its id once it is RUNNING. */
async function hangingCall(gateway: ChildGateway): Promise<string> {
  void gateway.gql(`mutation { callVerb(seat: "queue", verb: "depth", args: {queue: "q"}, timeoutMs: 60000) { __typename } }`).catch(() => undefined);
  return until(
    'the call is RUNNING',
    async () => (await gateway.gql(`{ calls(state: RUNNING, seat: "queue") { edges { node { id } } } }`)).data?.calls.edges[0]?.node.id,
    10_000,
  );
}

test('after SIGKILL a new process reads the finished call with its answer, and the interrupted one is ABANDONED', async () => {
  const first = await start();
  const act = (
    await first.gql(`mutation { recordHandAct(act: "replaced-fan", target: "m7", why: "it was loud", cause: "hardware") {
    ... on MutationRecordHandActSuccess { data { id callId } } } }`)
  ).data.recordHandAct.data;
  const running = await hangingCall(first);
  await first.kill();

  const second = await start();
  const finished = await readCall(second, act.callId);
  expect(finished).toMatchObject({ state: 'OK', verb: 'recordHandAct', replica: first.replica, answerJson: { id: act.id, why: 'it was loud' } });
  // The killed replica's lease runs out within LEASE_TTL_MS; the next sweep marks its calls.
  const abandoned = await until(
    'the interrupted call is ABANDONED',
    async () => {
      const call = await readCall(second, running);
      return call?.state === 'ABANDONED' ? call : undefined;
    },
    LEASE_TTL_MS + 2 * LEASE_REFRESH_MS + 5_000,
  );
  expect(abandoned).toMatchObject({ seat: 'queue', verb: 'depth', replica: first.replica, errorCode: 'ABANDONED' });
  expect(abandoned.error).toContain(`replica ${first.replica} stopped while the call ran`);
  const { data } = await second.gql(`{ handActs(cause: "hardware") { edges { node { id callId } } } }`);
  expect(data.handActs.edges.map((e: any) => e.node)).toEqual([{ id: act.id, callId: act.callId }]);

  // A process started again under the same replica name marks its predecessor's calls at once.
  const again = await hangingCall(second);
  await second.kill();
  const third = await start({ MESH_REPLICA: second.replica });
  expect(await readCall(third, again)).toMatchObject({ state: 'ABANDONED', replica: second.replica });
  expect((await readCall(third, again)).error).toContain(`replica ${second.replica} restarted`);
  await third.stop();
}, 120_000);

test('two replicas marking the same call abandoned: exactly one compare-and-set wins', async () => {
  const [a, b] = [await startTestGateway(env.env), await startTestGateway(env.env)];
  inProcess.push(a, b);
  await eventually(() => a.mesh.leases.liveReplicas().includes(b.config.replica), 'the first replica to see the lease of the second');
  // A call of a replica with a live lease, so neither sweep takes it before the race below.
  const ghost = `ghost-${Date.now()}`;
  await a.mesh.buckets.leases.put(
    `replica.${ghost}`,
    JSON.stringify({ replica: ghost, expiresAt: new Date(Date.now() + 60_000).toISOString(), startedAt: new Date().toISOString() }),
  );
  const now = Date.now();
  const call: Call = {
    id: newCallId(now),
    seat: 'queue',
    verb: 'depth',
    args: {},
    argsTruncated: false,
    caller: 'tester',
    door: 'NATS',
    state: 'RUNNING',
    startedAt: new Date(now).toISOString(),
    endedAt: null,
    answer: null,
    answerTruncated: false,
    answerBytes: null,
    error: null,
    replica: ghost,
  };
  const revision = await a.mesh.buckets.calls.put(call.id, JSON.stringify(call));
  const results = await Promise.all([abandonCall(a.mesh, call.id, revision, 'by a'), abandonCall(b.mesh, call.id, revision, 'by b')]);
  expect(results.filter(Boolean)).toHaveLength(1);
  const entry = await a.mesh.buckets.calls.get(call.id);
  expect(entry!.json<Call>().state).toBe('ABANDONED');
  // A stale revision never overwrites: a call that finished in the meantime stays finished.
  expect(await abandonCall(a.mesh, call.id, revision, 'late')).toBe(false);
  await a.mesh.buckets.leases.delete(`replica.${ghost}`);
});

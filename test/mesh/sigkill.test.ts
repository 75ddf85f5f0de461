import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { LEASE_REFRESH_MS, LEASE_TTL_MS } from '../../src/services/replicas/leases.js';
import { anActTally, tallyRecordHandAct } from '../fixtures/calls.js';
import { type ChildGateway, spawnGateway } from '../fixtures/child.js';
import { eventually } from '../fixtures/live.js';
import { type TestEnv, testEnv } from '../fixtures/services.js';

// A gateway as a child process, SIGKILLed ten times while acting NATS calls keep arriving; each
// time a new one is started. Afterwards every acknowledged call must be readable and done.
const KILLS = 10;
const SENDERS = 8;
/** Calls that reached a gateway (or timed out there) at most: well inside the 1000 calls the bucket keeps. */
const CALLS_MAX = 900;
/** A sender's pause after an answer, and while no gateway runs (no responders). */
const PAUSE_MS = 20;
const IDLE_MS = 100;

let env: TestEnv;
let nc: NatsConnection;
const children: ChildGateway[] = [];

beforeAll(async () => {
  env = await testEnv('sigkill');
  nc = await connect({ servers: env.env.NATS_URL });
});
afterAll(async () => {
  for (const child of children) await child.kill();
  await nc?.close();
  await env?.cleanup();
});

async function start(): Promise<ChildGateway> {
  // A dead replica's claim on its outbox rows lapses after 2 s (MESH_OUTBOX_CLAIM_S, 10 s by default):
  // the last gateway relays them that much sooner.
  const child = await spawnGateway({ ...env.env, MESH_OUTBOX_CLAIM_S: '2' });
  children.push(child);
  return child;
}

const HAND_ACTS = `query($after: String) { handActs(cause: "sigkill", first: 500, after: $after) {
  edges { node { id callId why } } pageInfo { hasNextPage endCursor } } }`;

async function allHandActs(gateway: ChildGateway): Promise<Map<string, { id: string; callId: string; why: string }>> {
  const acts = new Map<string, { id: string; callId: string; why: string }>();
  let after: string | undefined;
  for (;;) {
    const { data, errors } = await gateway.gql(HAND_ACTS, { after });
    expect(errors).toBeUndefined();
    for (const { node } of data.handActs.edges) acts.set(node.id, node);
    if (!data.handActs.pageInfo.hasNextPage) return acts;
    after = data.handActs.pageInfo.endCursor;
  }
}

/** How many calls of each state the gateway lists (every page). */
async function callStates(gateway: ChildGateway): Promise<Record<string, number>> {
  const states: Record<string, number> = {};
  for (const state of ['OK', 'FAILED', 'ABANDONED', 'RUNNING']) {
    states[state] = 0;
    let after: string | undefined;
    for (;;) {
      const { data } = await gateway.gql(
        `query($after: String) { calls(state: ${state}, first: 100, after: $after) { edges { node { id } } pageInfo { hasNextPage endCursor } } }`,
        { after },
      );
      states[state] += data.calls.edges.length;
      if (!data.calls.pageInfo.hasNextPage) break;
      after = data.calls.pageInfo.endCursor;
    }
  }
  return states;
}

test('ten SIGKILLs under acting NATS calls: every acknowledged call reads OK with its hand-act, and none is left RUNNING', async () => {
  const tally = anActTally();
  const { counts, acknowledged, refusals } = tally;
  let sending = true;
  const sender = async (s: number) => {
    for (let n = 0; sending && counts.sent < CALLS_MAX; n++) {
      const why = `sender ${s} call ${n}`;
      // A caller keeps at most CALLS_KEPT_PER_CALLER (100) calls (issue 35): each caller here sends
      // at most 50, so every acknowledged call is still kept when they are read.
      const user = `sigkill-tester-${s}-${Math.floor(n / 50)}`;
      const outcome = await tallyRecordHandAct(nc, env, user, { act: 'restarted', target: `m${s}`, why, cause: 'sigkill' }, 2_000, tally);
      // No responders: no gateway runs between a kill and the restart.
      const pause = outcome === 'no responders' ? IDLE_MS : PAUSE_MS;
      await new Promise((r) => setTimeout(r, pause));
    }
  };

  const senders = Array.from({ length: SENDERS }, (_, s) => sender(s));
  for (let kill = 0; kill < KILLS; kill++) {
    const child = await start();
    const before = counts.acknowledged;
    // Killed once it has answered some calls, with more in flight.
    await eventually(() => counts.acknowledged >= before + 3, `gateway ${kill + 1} to answer calls`, 20_000, 20);
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 300)));
    await child.kill('SIGKILL');
  }
  sending = false;
  await Promise.all(senders);

  // The last gateway sweeps: the killed replicas' leases run out and their RUNNING calls are marked.
  const last = await start();
  const running = async () =>
    (await last.gql(`{ calls(state: RUNNING, first: 100) { edges { node { id } } } }`)).data?.calls.edges.length as number | undefined;
  await eventually(async () => (await running()) === 0, 'no call left RUNNING', LEASE_TTL_MS + 3 * LEASE_REFRESH_MS + 10_000, 250);

  const states = await callStates(last);
  console.log(`sigkill: ${KILLS} kills; requests ${JSON.stringify(counts)}; calls by state ${JSON.stringify(states)}`);

  expect(counts.acknowledged).toBeGreaterThanOrEqual(KILLS * 3);
  expect(refusals).toEqual([]);
  // An act killed after its commit has its hand-act and its call's end in the outbox: another
  // replica relays them once the dead one's claim lapses (MESH_OUTBOX_CLAIM_S, 2 s here), over a sweep's
  // ABANDONED. Read until every acknowledged call and hand-act is there, within that and a margin.
  const missingNow = async () => {
    const acts = await allHandActs(last);
    const missing: string[] = [];
    for (const ack of acknowledged) {
      const { data } = await last.gql(`query($id: ID!) { call(id: $id) { id state verb } }`, { id: ack.callId });
      if (data?.call?.state !== 'OK') missing.push(`${ack.callId}: ${JSON.stringify(data?.call)}`);
      const act = acts.get(ack.handActId);
      if (!act || act.callId !== ack.callId || act.why !== ack.why) missing.push(`hand-act ${ack.handActId} of ${ack.callId}: ${JSON.stringify(act)}`);
    }
    return missing;
  };
  await eventually(async () => (await missingNow()).length === 0, 'every acknowledged call and hand-act relayed', 25_000, 500).catch(() => undefined);
  expect(await missingNow()).toEqual([]);
  const acts = await allHandActs(last);
  // The audit trail never contradicts itself: a call whose hand-act was written reads OK, never ABANDONED.
  const contradicted: string[] = [];
  for (const act of acts.values()) {
    const { data } = await last.gql(`query($id: ID!) { call(id: $id) { state } }`, { id: act.callId });
    if (data?.call?.state !== 'OK') contradicted.push(`${act.callId} of hand-act ${act.id}: ${JSON.stringify(data?.call)}`);
  }
  expect(contradicted).toEqual([]);
  expect(states.RUNNING).toBe(0);
  await last.stop();
}, 180_000);

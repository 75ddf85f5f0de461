import { connect, type NatsConnection } from '@nats-io/transport-node';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { endedOk, refusedCalls, startCall } from '../../../src/services/calls/records.js';
import { RESPONDER_IN_FLIGHT_MAX } from '../../../src/services/controller/responder.js';
import { appendHandAct } from '../../../src/services/hand-acts/hand-acts.js';
import { writeToOutbox } from '../../../src/services/hand-acts/outbox-write.js';
import { natsCall } from '../../fixtures/calls.js';
import { useGateway } from '../../fixtures/gateway.js';

const { gw: gateway, env } = useGateway('settled');
let nc: NatsConnection;

beforeAll(async () => {
  nc = await connect({ servers: env.env.NATS_URL });
});
afterAll(async () => {
  await nc?.close();
});

/**
 * Runs `setup` while `replica` holds a live lease, then lets the lease lapse: what a replica did
 * before it stopped. Without it the gateway's own sweep (every LEASE_REFRESH_MS) could settle a call
 * of a replica with no lease at all before its hand-act or outbox rows were written (seen once in
 * .ci/run: ABANDONED where OK was due).
 */
async function beforeItStopped<T>(replica: string, setup: () => Promise<T>): Promise<T> {
  const lease = (expiresAt: number) => JSON.stringify({ replica, expiresAt: new Date(expiresAt).toISOString(), startedAt: new Date().toISOString() });
  await gateway.mesh.buckets.leases.put(`replica.${replica}`, lease(Date.now() + 60_000));
  await expect.poll(() => gateway.mesh.leases.liveReplicas()).toContain(replica);
  const done = await setup();
  await gateway.mesh.buckets.leases.put(`replica.${replica}`, lease(Date.now() - 1_000));
  await expect.poll(() => gateway.mesh.leases.liveReplicas()).not.toContain(replica);
  return done;
}

const callById = async (id: string) => (await gateway.gql(`query($id: ID!) { call(id: $id) { state caller errorCode error answerJson } }`, { id })).data.call;

test('a call whose replica stopped after its hand-act was written is recorded OK, its answer saying it was lost; one without a hand-act is ABANDONED', async () => {
  // Two acts a replica that is gone (no lease) was running when it stopped: one had left its hand-act.
  const gone = { ...gateway.mesh, config: { ...gateway.mesh.config, replica: 'gone-replica-1' } };
  const base = { seat: env.controller, verb: 'recordHandAct', caller: 'alice', door: 'NATS' as const };
  const { done, act, undone } = await beforeItStopped('gone-replica-1', async () => {
    const { call: done } = await startCall(gone, { ...base, args: { act: 'drained-node', why: 'kernel update' } });
    const act = await appendHandAct(gateway.mesh, { actor: 'alice', act: 'drained-node', why: 'kernel update', callId: done.id });
    const { call: undone } = await startCall(gone, { ...base, args: { act: 'cleared-queue', why: 'backlog' } });
    return { done, act, undone };
  });

  await gateway.mesh.leases.sweep();
  await expect
    .poll(() => callById(done.id))
    .toEqual({
      state: 'OK',
      caller: 'alice',
      errorCode: null,
      error: null,
      answerJson: { done: true, handActId: act.id, note: 'done; the answer was lost: replica gone-replica-1 stopped while the call ran (its lease is gone)' },
    });
  expect(await callById(undone.id)).toMatchObject({ state: 'ABANDONED', errorCode: 'ABANDONED', answerJson: null });
  // The audit trail agrees with itself: every hand-act's call finished OK.
  const acts = (await gateway.gql(`{ handActs(act: "drained-node") { edges { node { callId } } } }`)).data.handActs.edges;
  expect(acts).toEqual([{ node: { callId: done.id } }]);
});

test('a call whose replica stopped after its act committed, its records still waiting in the outbox under that replica’s claim, reads its own end: OK with its answer, and its hand-act', async () => {
  // The replica committed the act with its hand-act and its call's end, answered its caller (its
  // own put took longer than DELIVER_WAIT_MS), and died before putting them: its claim on the rows
  // would hold them from any relay for another RELAY_CLAIM_MS.
  const gone = { ...gateway.mesh, config: { ...gateway.mesh.config, replica: 'gone-replica-2' } };
  const answer = { act: 'rebooted-switch', answeredTo: 'alice' };
  const { started, act } = await beforeItStopped('gone-replica-2', async () => {
    const started = await startCall(gone, {
      seat: env.controller,
      verb: 'recordHandAct',
      caller: 'alice',
      door: 'NATS',
      args: { act: 'rebooted-switch', why: 'firmware' },
    });
    const act = await gateway.mesh.db.transaction().execute(async (tx) => {
      const record = await appendHandAct(
        { ...gateway.mesh, outbox: { tx, ids: [] } },
        { actor: 'alice', act: 'rebooted-switch', why: 'firmware', callId: started.call.id },
      );
      await writeToOutbox(tx, 'calls', started.call.id, JSON.stringify(endedOk(started, answer)));
      await sql`update record_outbox set claimed_until = now() + interval '1 hour'`.execute(tx);
      return record;
    });
    return { started, act };
  });

  await gateway.mesh.leases.sweep();
  expect(await callById(started.call.id)).toEqual({ state: 'OK', caller: 'alice', errorCode: null, error: null, answerJson: answer });
  const acts = (await gateway.gql(`{ handActs(act: "rebooted-switch") { edges { node { id callId } } } }`)).data.handActs.edges;
  expect(acts).toEqual([{ node: { id: act.id, callId: started.call.id } }]);
  const waiting = await sql<{ n: string }>`select count(*)::text as n from record_outbox`.execute(gateway.mesh.db);
  expect(waiting.rows[0]!.n).toBe('0');
});

test('an act or a read refused BUSY is counted, never kept (issue 35)', async () => {
  // A seat holder that never answers keeps RESPONDER_IN_FLIGHT_MAX forwarded calls in flight, each
  // for its timeoutMs: long enough that a loaded machine (the whole suite at once) still sends the
  // probes below before the first of them times out and makes room (4 s did not, once, in .ci/run).
  const heard: string[] = [];
  const holder = nc.subscribe(`${env.subjects}.seat.queue.depth`, { callback: (_err, msg) => void heard.push(msg.subject) });
  await nc.flush();
  const subject = (verb: string) => `${env.subjects}.seat.${env.controller}.${verb}.tester`;
  const slow = Array.from({ length: RESPONDER_IN_FLIGHT_MAX }, () =>
    nc.request(subject('callVerb'), JSON.stringify({ seat: 'queue', verb: 'depth', args: { queue: 'q' }, timeoutMs: 10_000 }), { timeout: 20_000 }),
  );
  await expect.poll(() => heard.length, { timeout: 10_000 }).toBe(RESPONDER_IN_FLIGHT_MAX);

  const busyAct = await natsCall(nc, env, 'recordHandAct', { act: 'busy-probe', why: 'while busy' }, { timeoutMs: 5_000 });
  expect(busyAct.body).toEqual({ ok: false, error: { code: 'BUSY', message: 'too many calls in flight; try again' } });
  expect(busyAct.callId).toBeUndefined();
  expect(refusedCalls(gateway.mesh).get('BUSY')).toBeGreaterThanOrEqual(1);

  const busyRead = await natsCall(nc, env, 'plans', '{}', { timeoutMs: 5_000 });
  expect(busyRead.body).toMatchObject({ ok: false, error: { code: 'BUSY' } });
  expect(busyRead.callId).toBeUndefined();

  await Promise.allSettled(slow);
  holder.unsubscribe();
  const after = await natsCall(nc, env, 'recordHandAct', { act: 'after-busy', why: 'room again' }, { timeoutMs: 5_000 });
  expect(after.body).toMatchObject({ ok: true, answer: { act: 'after-busy' } });
  const refused = (await gateway.gql(`{ calls(verb: "recordHandAct", state: FAILED) { edges { node { id errorCode } } } }`)).data.calls.edges;
  expect(refused).toEqual([]);
  const reads = (await gateway.gql(`{ calls(verb: "plans") { edges { node { id } } } }`)).data.calls.edges;
  expect(reads).toEqual([]);
}, 60_000);

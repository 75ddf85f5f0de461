import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { useGateway } from '../../fixtures/gateway.js';
import { anAgent, eventually } from '../../fixtures/live.js';

// Issue 34, item 4: a whole composition with seq 2^53 and no machines, published on
// `<subjects>.status` by any NATS client, was taken: the status then answered no data, and new
// machines never appeared.

const { gw: gateway, env } = useGateway('forged', { env: { MESH_HEARTBEAT_S: '1' } });
let nc: NatsConnection;

beforeAll(async () => {
  nc = await connect({ servers: env.env.NATS_URL });
  await eventually(() => gateway.mesh.status.current(), 'the first composition');
});
afterAll(async () => {
  await nc?.close();
});

const statusNames = async () => {
  const { data, errors } = await gateway.gql('{ status { seq machines { name } } }');
  expect(errors).toBeUndefined();
  return { seq: data.status.seq as number, names: (data.status.machines as { name: string }[]).map((m) => m.name) };
};

test('a whole composition with an unsafe seq on the status subject is ignored: the status keeps answering, with the machines heard after it', async () => {
  const held = gateway.mesh.status.current()!.seq;
  const forged = {
    seq: 9007199254740992,
    controller: env.controller,
    composedAt: new Date().toISOString(),
    tookMs: 0,
    trigger: 'news',
    machines: [],
    seats: [],
    unheldSeats: [],
    callsRunning: 0,
    handActsThisWeek: 0,
    repeatedCauses: [],
    plans: [],
  };
  // As the attacker sent it: plain JSON, no headers, from a client of its own.
  nc.publish(`${env.subjects}.status`, JSON.stringify(forged));
  await nc.flush();
  const agent = await anAgent(env.env.NATS_URL);
  try {
    agent.heartbeat(env.subjects, 'after-forgery-1', { site: 'eu-1', modules: ['broker'] });
    await eventually(async () => (await statusNames()).names.includes('after-forgery-1'), 'the machine heard after the forgery in status', 10_000);
  } finally {
    await agent.close();
  }
  const { seq } = await statusNames();
  expect(seq).toBeGreaterThan(held);
  expect(seq).toBeLessThan(held + 1_000);
});

const emptyComposition = (seq: number) => ({
  seq,
  controller: env.controller,
  composedAt: new Date().toISOString(),
  tookMs: 0,
  trigger: 'news',
  machines: [],
  seats: [],
  unheldSeats: [],
  callsRunning: 0,
  handActsThisWeek: 0,
  repeatedCauses: [],
  plans: [],
});

test('a composition from anyone but the serving replica, on the status subject or put into the status stream, is ignored and counted; new machines keep appearing', async () => {
  const seal = gateway.mesh.statusSeal;
  const before = seal.refusedTotal();
  const held = gateway.mesh.status.current()!.seq;
  // On the subject: a bounded seq just past the one held, no machines, headers claiming the serving replica.
  const claimed = headers();
  claimed.set('Mesh-Status-Seq', String(held + 1));
  claimed.set('Mesh-Status-Replica', gateway.config.replica);
  claimed.set('Mesh-Status-Term', '0');
  claimed.set('Mesh-Status-Key', '1');
  claimed.set('Mesh-Status-Seal', Buffer.alloc(32).toString('base64url'));
  nc.publish(`${env.subjects}.status`, JSON.stringify(emptyComposition(held + 1)), { headers: claimed });
  // Into the stream: a snapshot framed as the publisher frames one.
  const framed = headers();
  framed.set('Mesh-Status-Seq', String(held + 2));
  framed.set('Mesh-Status-Kind', 'snapshot');
  nc.publish(`${env.subjects}.status.${env.controller}.snapshot`, JSON.stringify(emptyComposition(held + 2)), { headers: framed });
  await nc.flush();
  await eventually(() => seal.refusedTotal() >= before + 2, 'both forgeries counted');
  expect(seal.refused().forged + seal.refused().unsealed).toBeGreaterThanOrEqual(2);
  // Operators see it on /metrics, by reason.
  const scraped = await (await fetch(`${new URL(gateway.url).origin}/metrics`)).text();
  const refusedOnMetrics = scraped
    .split('\n')
    .filter((line) => /^mesh_status_refused_total\{reason="(forged|unsealed)"[,}]/.test(line))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
  expect(refusedOnMetrics).toBeGreaterThanOrEqual(2);
  const agent = await anAgent(env.env.NATS_URL);
  try {
    agent.heartbeat(env.subjects, 'after-forgery-2', { site: 'eu-1', modules: ['broker'] });
    await eventually(async () => (await statusNames()).names.includes('after-forgery-2'), 'the machine heard after the forgeries in status', 10_000);
  } finally {
    await agent.close();
  }
  expect((await statusNames()).names.length).toBeGreaterThan(1);
});

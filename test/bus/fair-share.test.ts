import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { makeRoomFor } from '../../src/bus/fair-share.js';
import { KvView } from '../../src/bus/kv-view.js';
import { CALLS_KEPT_PER_CALLER, refusedCalls } from '../../src/services/calls/records.js';
import { useGateway } from '../fixtures/gateway.js';
import { DEFINE_SEAT } from '../fixtures/operations.js';
import { NATS_URL, uniqueName } from '../fixtures/services.js';

// Kept records are a fair share (issue 35): one caller's calls, however many, push out only its own.
const { gw, env } = useGateway('fairshare', {
  tokens: [
    { name: 'patient', scopes: ['read', 'act'], token: 'token-of-patient' },
    { name: 'flooder', scopes: ['read', 'act'], token: 'token-of-flooder' },
    { name: 'operator', scopes: ['read', 'act', 'admin'], token: 'token-of-operator' },
  ],
});
let nc: NatsConnection;
beforeAll(async () => {
  nc = await connect({ servers: NATS_URL });
});
afterAll(async () => {
  await nc?.close();
});

const as = (token: string) => ({ authorization: `Bearer ${token}` });
/** callVerb to a seat's verb nobody listens for: admitted, sent, FAILED NO_RESPONDERS, and kept. */
const callQuiet = async (token: string, verb = 'ping') =>
  (
    await gw.gql(
      `mutation { callVerb(seat: "quiet", verb: "${verb}", args: {}, timeoutMs: 500) { __typename ... on MutationCallVerbSuccess { data { id state } } ... on Error { code } } }`,
      {},
      as(token),
    )
  ).data?.callVerb;
const callById = async (id: string) => (await gw.gql(`query($id: ID!) { call(id: $id) { id caller state } }`, { id }, as('token-of-patient'))).data?.call;
const keptInStream = async () => (await (await jetstreamManager(nc)).streams.info(`KV_${env.controller}_calls`)).state.messages;

test(`one caller's 1,200 failed calls push out only its own: another caller's earlier call is still read by its id, and the flooder keeps its ${CALLS_KEPT_PER_CALLER}`, async () => {
  const defined = await gw.gql(DEFINE_SEAT, { input: { name: 'quiet', serves: [{ name: 'ping', acting: false, args: [] }] } }, as('token-of-operator'));
  expect(defined.data.defineSeat.__typename).toBe('MutationDefineSeatSuccess');
  const kept = await callQuiet('token-of-patient');
  expect(kept).toMatchObject({ __typename: 'MutationCallVerbSuccess', data: { state: 'FAILED' } });

  for (let sent = 0; sent < 1200; sent += 20) {
    const answers = await Promise.all(Array.from({ length: 20 }, () => callQuiet('token-of-flooder')));
    for (const answer of answers) expect(answer.data.state).toBe('FAILED');
  }

  expect(await callById(kept.data.id)).toEqual({ id: kept.data.id, caller: 'patient', state: 'FAILED' });
  const flooders = gw.mesh.views.calls.values().filter((e) => e.value.caller === 'flooder').length;
  expect(flooders).toBe(CALLS_KEPT_PER_CALLER);
  // What was taken out left no delete marker to count against the bucket's 1,000.
  expect(await keptInStream()).toBe(gw.mesh.views.calls.size);
}, 180_000);

test('a refused request leaves a counter, never a kept call', async () => {
  const before = await keptInStream();
  const counted = refusedCalls(gw.mesh).get('NOT_FOUND') ?? 0;
  for (let i = 0; i < 50; i++) expect((await callQuiet('token-of-flooder', 'nope')).code).toBe('NOT_FOUND');
  expect(await keptInStream()).toBe(before);
  expect(refusedCalls(gw.mesh).get('NOT_FOUND')).toBe(counted + 50);
  // Operators see the refusals on /metrics, by code.
  const scraped = await (await fetch(`${new URL(gw.url).origin}/metrics`, { headers: as('token-of-operator') })).text();
  const line = scraped.split('\n').find((l) => /^mesh_calls_refused_total\{code="NOT_FOUND"[,}]/.test(l));
  expect(Number(line?.split(' ').at(-1))).toBe(counted + 50);
});

test('in a full bucket the oldest of whoever holds the most goes, and an owner at its share makes room with its own oldest', async () => {
  const name = uniqueName('share');
  const kvm = new Kvm(nc);
  const kv = await kvm.create(name, { history: 1 });
  const view = await KvView.start<{ owner: string }>(kv, name, await jetstreamManager(nc), { decode: (e) => e.json<{ owner: string }>() });
  try {
    const bucket = { kv, view, kept: 10, share: 4, ownerOf: (v: { owner: string }) => v.owner, mayGo: () => true };
    const put = async (owner: string, key: string) => {
      await makeRoomFor(bucket, owner);
      view.apply(key, { owner }, await kv.put(key, JSON.stringify({ owner })));
    };
    for (const owner of ['a', 'b', 'c']) for (let i = 0; i < 3; i++) await put(owner, `${owner}${i}`);
    // Nine kept; one more fills the bucket: the oldest of whoever holds the most goes (all hold three: a's, then b's).
    await put('d', 'd0');
    await put('d', 'd1');
    const keys = () =>
      view
        .values()
        .map((e) => e.key)
        .sort();
    expect(keys()).toEqual(['a1', 'a2', 'b1', 'b2', 'c0', 'c1', 'c2', 'd0', 'd1']);
    // d, sending on, takes c's third, then only its own oldest: the others keep two each.
    for (let i = 2; i < 30; i++) await put('d', `d${i}`);
    expect(keys()).toEqual(['a1', 'a2', 'b1', 'b2', 'c1', 'c2', 'd27', 'd28', 'd29']);
    // Nothing taken out left a delete marker behind in the stream.
    expect((await (await jetstreamManager(nc)).streams.info(`KV_${name}`)).state.messages).toBe(keys().length);
  } finally {
    view.stop();
    await (await jetstreamManager(nc)).streams.delete(`KV_${name}`).catch(() => undefined);
  }
});

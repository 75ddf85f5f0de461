import { connect, headers, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { natsCall } from '../../fixtures/calls.js';
import { useGateway } from '../../fixtures/gateway.js';
import { type LogLine, logInto } from '../../fixtures/log.js';
import { DEFINE_SEAT } from '../../fixtures/operations.js';
import type { TokenFixture } from '../../fixtures/services.js';

// Issue 35, finding 1: on a NATS without permissions, a plain client sent
// `<subjects>.seat.<controller>.retireSeat.<controller>` with `Mesh-Caller: <controller>` and
// `Mesh-Scopes: read,act,admin`: answered ok, and the seat was retired, on a gateway whose HTTP
// doors require tokens. Now the controller's own subject takes only what a replica forwards, with
// a proof made with the replica key: forged, altered or replayed headers are refused (FORBIDDEN,
// counted as `unproven`, not kept). Finding "NATS accepts anyone" is said on /ready and /metrics.

const ACTOR: TokenFixture = { name: 'actor', scopes: ['read', 'act'], token: 'token-of-actor-35' };
const ADMIN: TokenFixture = { name: 'chief', scopes: ['read', 'act', 'admin'], token: 'token-of-chief-35' };
const lines: LogLine[] = [];
const { gw, env } = useGateway('proof', { tokens: [ACTOR, ADMIN], logger: () => logInto(lines, 'warn') });
let nc: NatsConnection;
beforeAll(async () => {
  nc = await connect({ servers: env.env.NATS_URL });
});
afterAll(async () => {
  await nc?.close();
});

const as = (t: TokenFixture) => ({ authorization: `Bearer ${t.token}` });
const seatExists = async (name: string) => (await gw.gql(`{ seat(name: "${name}") { name } }`, {}, as(ADMIN))).data?.seat?.name === name;
const aSeat = async (name: string) => {
  const made = await gw.gql(DEFINE_SEAT, { input: { name, scope: 'site' } }, as(ADMIN));
  expect(made.errors).toBeUndefined();
};
const base = () => gw.url.replace(/\/graphql$/, '');
async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${base()}/metrics`, { headers: as(ADMIN) })).text();
  const line = text.split('\n').find((l) => l.startsWith(name));
  return Number(line?.split(' ').at(-1) ?? Number.NaN);
}
const refusedUnproven = () => metric('mesh_nats_refused_total{reason="unproven"');
const callsBy = async (caller: string) =>
  (await gw.gql(`{ calls(caller: "${caller}") { edges { node { id verb state } } } }`, {}, as(ADMIN))).data.calls.edges.map((e: any) => e.node);

test('a client that is not a replica, naming the controller and every scope in the headers, retires nothing: refused, counted, not kept', async () => {
  await aSeat('proof-target');
  const counted = await refusedUnproven();
  const h = headers();
  h.set('Mesh-Caller', env.controller);
  h.set('Mesh-Scopes', 'read,act,admin');
  h.set('Mesh-Outer-Call', '0mx3eakrpc00c7140c7');
  const { body, callId } = await natsCall(nc, env, 'retireSeat', { seat: 'proof-target', why: 'forged' }, { user: env.controller, headers: h });
  expect(body).toMatchObject({ ok: false, error: { code: 'FORBIDDEN', message: expect.stringContaining('it carries no proof') } });
  expect(callId).toBeUndefined();
  expect(await seatExists('proof-target')).toBe(true);
  expect(await refusedUnproven()).toBe(counted + 1);
  expect(await callsBy(env.controller)).toEqual([]);
});

test('a forwarded call seen on the wire is taken once: sent again, or with its scopes or body changed, it is refused', async () => {
  await aSeat('proof-replayed');
  // Anyone on such a NATS can listen on the controller's subject and keep what a replica sent.
  const seen: Msg[] = [];
  const spy = nc.subscribe(`${env.subjects}.seat.${env.controller}.*.${env.controller}`, { callback: (_e, msg) => void seen.push(msg) });
  await nc.flush();
  const outer = (
    await gw.gql(
      `mutation { callVerb(seat: "${env.controller}", verb: "recordHandAct", args: { act: "proof-act", why: "once" }) {
        ... on MutationCallVerbSuccess { data { id state caller } } ... on Error { code message } } }`,
      {},
      as(ACTOR),
    )
  ).data.callVerb;
  expect(outer.data).toMatchObject({ state: 'OK', caller: 'actor' });
  await expect.poll(() => seen.length).toBe(1);
  spy.unsubscribe();
  const [forwarded] = seen;
  expect(forwarded.headers?.get('Mesh-Forward-Proof')).toMatch(/^[A-Za-z0-9_-]{43}$/);

  const counted = await refusedUnproven();
  const replay = await nc.request(forwarded.subject, forwarded.data, { headers: forwarded.headers, timeout: 5_000 });
  expect(replay.json()).toMatchObject({ ok: false, error: { code: 'FORBIDDEN', message: expect.stringContaining('already taken once') } });

  // The same proof with admin added, or over another body (a retirement), verifies under no key.
  const widened = headers();
  for (const [k, v] of forwarded.headers ?? []) widened.set(k, k === 'Mesh-Scopes' ? 'act,admin,read' : v[0]);
  const escalated = await nc.request(`${env.subjects}.seat.${env.controller}.retireSeat.${env.controller}`, JSON.stringify({ seat: 'proof-replayed' }), {
    headers: widened,
    timeout: 5_000,
  });
  expect(escalated.json()).toMatchObject({ ok: false, error: { code: 'FORBIDDEN', message: expect.stringContaining('does not verify') } });
  expect(await seatExists('proof-replayed')).toBe(true);
  expect(await refusedUnproven()).toBe(counted + 2);
  // One hand-act: the replica's, never the replay's.
  const acts = (await gw.gql(`{ handActs(act: "proof-act") { edges { node { actor callId } } } }`, {}, as(ADMIN))).data.handActs.edges;
  expect(acts).toHaveLength(1);
  expect(acts[0].node.actor).toBe('actor');
});

test('callVerb to the controller’s own seat still runs with the outer caller’s scopes: an act token cannot retire', async () => {
  await aSeat('proof-kept');
  const outer = (
    await gw.gql(
      `mutation { callVerb(seat: "${env.controller}", verb: "retireSeat", args: { seat: "proof-kept", why: "done" }) {
        ... on MutationCallVerbSuccess { data { state errorCode } } ... on Error { code message } } }`,
      {},
      as(ACTOR),
    )
  ).data.callVerb;
  expect(outer.code ?? outer.data.errorCode).toBe('FORBIDDEN');
  expect(await seatExists('proof-kept')).toBe(true);
  const byChief = (
    await gw.gql(
      `mutation { callVerb(seat: "${env.controller}", verb: "retireSeat", args: { seat: "proof-kept", why: "done" }) {
        ... on MutationCallVerbSuccess { data { state errorCode } } ... on Error { code message } } }`,
      {},
      as(ADMIN),
    )
  ).data.callVerb;
  expect(byChief, JSON.stringify(byChief)).toMatchObject({ data: { state: 'OK', errorCode: null } });
  expect(await seatExists('proof-kept')).toBe(false);
});

test('tokens close the HTTP doors while this NATS accepts anyone: /ready says so without failing, and mesh_nats_open is 1', async () => {
  expect(gw.mesh.bus.authRequired()).toBe(false);
  const ready = await fetch(`${base()}/ready`, { headers: as(ADMIN) });
  const body = (await ready.json()) as { checks: { nats: Record<string, unknown> } };
  expect(body.checks.nats).toMatchObject({ ok: true, open: true, warning: expect.stringContaining('docs/nats-account.conf') });
  expect(await metric('mesh_nats_open')).toBe(1);
  expect(lines.filter((l) => String(l.msg).includes('auth_required false'))).toHaveLength(1);
});

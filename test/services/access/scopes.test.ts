import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadNatsUsers, NATS_DEFAULT_SCOPES } from '../../../src/services/access/nats-users.js';
import { CONTROLLER_VERBS } from '../../../src/services/controller/verbs.js';
import { natsCall as callOverNats } from '../../fixtures/calls.js';
import { useGateway } from '../../fixtures/gateway.js';
import { DEFINE_SEAT } from '../../fixtures/operations.js';
import type { TokenFixture } from '../../fixtures/services.js';

// Issue 20, findings 1, 2 and 6 (the unnamed subject's calls, callVerb nesting): every verb's scope,
// through every door.

const ACTOR: TokenFixture = { name: 'actor', scopes: ['read', 'act'], token: 'token-of-actor-20' };
const ADMIN: TokenFixture = { name: 'chief', scopes: ['read', 'act', 'admin'], token: 'token-of-chief-20' };

let usersDir: string;
let usersFile: string;
let nc: NatsConnection;

function writeUsers(users: { name: string; scopes: string[] }[]) {
  writeFileSync(`${usersFile}.tmp`, JSON.stringify({ users }));
  renameSync(`${usersFile}.tmp`, usersFile);
}

beforeAll(() => {
  usersDir = mkdtempSync(join(tmpdir(), 'mesh-nats-users-'));
  usersFile = join(usersDir, 'nats-users.json');
  writeUsers([
    { name: 'alice', scopes: ['read', 'act'] },
    { name: 'ops', scopes: ['read', 'act', 'admin'] },
  ]);
});
afterAll(() => rmSync(usersDir, { recursive: true, force: true }));
const { gw, env } = useGateway('scopes', { tokens: [ACTOR, ADMIN], env: () => ({ MESH_NATS_USERS_FILE: usersFile }) });
beforeAll(async () => {
  nc = await connect({ servers: env.env.NATS_URL });
});
afterAll(async () => {
  await nc?.close();
});

const as = (who: TokenFixture) => ({ authorization: `Bearer ${who.token}` });
const seatExists = async (name: string) => (await gw.gql(`query($n: String!) { seat(name: $n) { name } }`, { n: name }, as(ADMIN))).data.seat !== null;
const callsOf = async (filter = '') =>
  (await gw.gql(`{ calls(first: 100${filter}) { edges { node { id verb caller state errorCode outerCallId } } } }`, {}, as(ADMIN))).data.calls.edges.map(
    (e: any) => e.node,
  );
async function aSeat(name: string) {
  const { data } = await gw.gql(DEFINE_SEAT, { input: { name, scope: 'site' } }, as(ADMIN));
  expect(data.defineSeat.__typename).toBe('MutationDefineSeatSuccess');
}

const CALL_VERB = `mutation($seat: String!, $verb: String!, $args: JSON) { callVerb(seat: $seat, verb: $verb, args: $args) {
  __typename ... on Error { code message } ... on MutationCallVerbSuccess { data { id state errorCode error answerJson } } } }`;

/** A NATS request to a controller verb, as `user` (its named subject) or on the unnamed subject (''). */
const natsCall = (verb: string, body: object, user: string, extra: { headers?: ReturnType<typeof headers> } = {}) =>
  callOverNats(nc, env, verb, body, { user, headers: extra.headers });

/** The value of `mesh_nats_refused_total` for a reason, read from /metrics. */
async function refusedCount(reason: string): Promise<number> {
  const text = await (await fetch(gw.url.replace(/\/graphql$/, '/metrics'), { headers: as(ADMIN) })).text();
  const line = text.split('\n').find((l) => l.startsWith('mesh_nats_refused_total{') && l.includes(`reason="${reason}"`));
  return Number(line?.split(' ').at(-1) ?? Number.NaN);
}

describe('every verb declares its scope', () => {
  test('each controller verb needs read, act or admin; seat and machine removals need admin', async () => {
    const { CONTROLLER_VERB_SCOPES } = await import('../../../src/services/controller/verbs.js');
    expect(Object.keys(CONTROLLER_VERB_SCOPES).sort()).toEqual(CONTROLLER_VERBS.map((v) => v.name).sort());
    expect(CONTROLLER_VERB_SCOPES).toMatchObject({
      retireSeat: 'admin',
      removeAlias: 'admin',
      forgetMachine: 'admin',
      callVerb: 'act',
      push: 'act',
      status: 'read',
    });
  });
});

describe('callVerb to the controller runs the verb with the outer caller’s scopes (finding 1)', () => {
  test.each([
    ['retireSeat', (seat: string) => ({ seat, why: 'through the side door' })],
    ['removeAlias', (seat: string) => ({ alias: seat, why: 'through the side door' })],
    ['forgetMachine', (seat: string) => ({ machine: seat, why: 'through the side door' })],
  ])('an act token is refused %s through callVerb, as data naming the admin scope, and nothing changes', async (verb, argsFor) => {
    const seat = `side-door-${verb.toLowerCase()}`;
    await aSeat(seat);
    const before = await callsOf();
    const refused = (await gw.gql(CALL_VERB, { seat: env.controller, verb, args: argsFor(seat) }, as(ACTOR))).data.callVerb;
    expect(refused).toEqual({
      __typename: 'ForbiddenError',
      code: 'FORBIDDEN',
      message: `actor may not run ${env.controller}.${verb}: it needs the admin scope`,
    });
    expect(await seatExists(seat)).toBe(true);
    expect(await callsOf()).toEqual(before);
    const direct = (
      await gw.gql(
        `mutation { ${verb}(${verb === 'retireSeat' ? 'seat' : verb === 'removeAlias' ? 'alias' : 'machine'}: "${seat}", why: "x") { __typename ... on Error { message } } }`,
        {},
        as(ACTOR),
      )
    ).data[verb];
    expect(direct).toEqual({ __typename: 'ForbiddenError', message: `actor may not run ${verb}: it needs the admin scope` });
  });

  test('an admin token retires a seat through callVerb, and the inner call and hand-act name it', async () => {
    await aSeat('retired-by-chief');
    const outer = (await gw.gql(CALL_VERB, { seat: env.controller, verb: 'retireSeat', args: { seat: 'retired-by-chief', why: 'unused' } }, as(ADMIN))).data
      .callVerb;
    expect(outer.data).toMatchObject({ state: 'OK', answerJson: { name: 'retired-by-chief' } });
    expect(await seatExists('retired-by-chief')).toBe(false);
    const inner = (await callsOf(', verb: "retireSeat"'))[0];
    expect(inner).toMatchObject({ caller: 'chief', state: 'OK', outerCallId: outer.data.id });
  });

  test('callVerb does not nest: callVerb of the controller’s callVerb is refused before anything is sent', async () => {
    const before = (await callsOf()).length;
    const nested = (
      await gw.gql(
        CALL_VERB,
        {
          seat: env.controller,
          verb: 'callVerb',
          args: { seat: env.controller, verb: 'callVerb', args: { seat: env.controller, verb: 'recordHandAct', args: { act: 'x', why: 'loop' } } },
        },
        as(ADMIN),
      )
    ).data.callVerb;
    expect(nested).toMatchObject({ __typename: 'ForbiddenError', code: 'FORBIDDEN', message: expect.stringContaining('callVerb does not nest') });
    // Refused before admission: counted, not kept (issue 35), and no inner call.
    expect((await callsOf()).length).toBe(before);
  });

  test('a forged outer call on the controller’s own subject without the scopes header runs with no scope', async () => {
    await aSeat('forged-scopes');
    const h = headers();
    h.set('Mesh-Caller', 'chief');
    h.set('Mesh-Outer-Call', '0mx3eakrpc00c7140c7');
    const { body } = await natsCall('retireSeat', { seat: 'forged-scopes', why: 'forged' }, env.controller, { headers: h });
    expect(body).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
    expect(await seatExists('forged-scopes')).toBe(true);
  });
});

describe('NATS users have the scopes MESH_NATS_USERS_FILE gives them (finding 2)', () => {
  test('a read-act user is refused an admin verb on its named subject: not kept, counted, and the seat stays', async () => {
    await aSeat('builder-like');
    const counted = await refusedCount('scope');
    const before = await callsOf();
    const { body, callId } = await natsCall('retireSeat', { seat: 'builder-like', why: 'as an agent' }, 'alice');
    expect(body).toEqual({ ok: false, error: { code: 'FORBIDDEN', message: 'alice may not run retireSeat: it needs the admin scope' } });
    expect(callId).toBeUndefined();
    expect(await seatExists('builder-like')).toBe(true);
    expect(await callsOf()).toEqual(before);
    expect(await refusedCount('scope')).toBe(counted + 1);
    // Her acting verbs still run under her name.
    const acted = await natsCall('recordHandAct', { act: 'drained', why: 'kernel update' }, 'alice');
    expect(acted.body).toMatchObject({ ok: true, answer: { actor: 'alice' } });
  });

  test('an admin user retires a seat over NATS', async () => {
    await aSeat('retired-by-ops');
    const { body, callId } = await natsCall('retireSeat', { seat: 'retired-by-ops', why: 'unused' }, 'ops');
    expect(body).toMatchObject({ ok: true, answer: { name: 'retired-by-ops' } });
    expect(callId).toBeTruthy();
    expect(await seatExists('retired-by-ops')).toBe(false);
  });

  test('a user the file does not list has no scope, reads included', async () => {
    const { body } = await natsCall('status', {}, 'mallory');
    expect(body).toMatchObject({ ok: false, error: { code: 'FORBIDDEN', message: expect.stringContaining('mallory has no scope') } });
  });

  test('the file is re-read when it changes: a user given admin may retire a seat', async () => {
    await aSeat('retired-after-reload');
    writeUsers([
      { name: 'alice', scopes: ['read', 'act', 'admin'] },
      { name: 'ops', scopes: ['read', 'act', 'admin'] },
    ]);
    await expect
      .poll(async () => (await natsCall('retireSeat', { seat: 'retired-after-reload', why: 'promoted' }, 'alice')).body.ok, { timeout: 10_000, interval: 300 })
      .toBe(true);
    writeUsers([
      { name: 'alice', scopes: ['read', 'act'] },
      { name: 'ops', scopes: ['read', 'act', 'admin'] },
    ]);
    // Demoted again: forgetting a machine nobody has heard is FORBIDDEN again, no longer NOT_FOUND.
    await expect
      .poll(async () => (await natsCall('forgetMachine', { machine: 'ghost', why: 'x' }, 'alice')).body.error.code, { timeout: 10_000, interval: 300 })
      .toBe('FORBIDDEN');
  });

  test('without the file every NATS user has read and act, never admin', () => {
    const users = loadNatsUsers(undefined);
    expect([...users.scopesOf('anyone')].sort()).toEqual(['act', 'read']);
    expect(NATS_DEFAULT_SCOPES.has('admin')).toBe(false);
  });
});

describe('the unnamed subject (finding 2 and 6)', () => {
  test('answers no verb that shows other callers’ calls', async () => {
    const kept = (await natsCall('recordHandAct', { act: 'secret', why: 'private' }, 'alice')).callId;
    for (const [verb, body] of [
      ['calls', {}],
      ['call', { id: kept }],
    ] as const) {
      const { body: answer } = await natsCall(verb, body, '');
      expect(answer, verb).toMatchObject({ ok: false, error: { code: 'FORBIDDEN', message: expect.stringContaining('other callers') } });
      expect(JSON.stringify(answer)).not.toContain('secret');
    }
    // Under a name with the read scope they are answered.
    expect((await natsCall('call', { id: kept }, 'alice')).body).toMatchObject({ ok: true, answer: { id: kept } });
    // Other reads still answer there.
    expect((await natsCall('durations', {}, '')).body).toMatchObject({ ok: true });
  });

  test('refused acts and unknown verbs there are counted in /metrics, never kept as calls', async () => {
    const before = await callsOf();
    const unnamed = await refusedCount('unnamed');
    const unknown = await refusedCount('unknown-verb');
    for (let i = 0; i < 5; i++) {
      expect((await natsCall('recordHandAct', { act: 'flood', why: 'push calls out' }, '')).body.error.code).toBe('FORBIDDEN');
      expect((await natsCall(`noSuchVerb${i}`, {}, '')).body.error.code).toBe('NOT_FOUND');
    }
    expect(await callsOf()).toEqual(before);
    expect(await refusedCount('unnamed')).toBe(unnamed + 5);
    expect(await refusedCount('unknown-verb')).toBe(unknown + 5);
  });
});

test("a machine's heartbeat claim of the controller's own seat is ignored; its other claims stand (finding 6)", async () => {
  nc.publish(
    `${env.subjects}.news.machine.m-claimer`,
    JSON.stringify({ kind: 'heartbeat', site: 'eu-1', modules: ['broker'], claims: { broker: [env.controller, 'queue'] } }),
  );
  const holdersOf = async (seat: string) =>
    (await gw.gql(`query($n: String!) { seat(name: $n) { holders { machine { name } derived } } }`, { n: seat }, as(ADMIN))).data.seat.holders;
  await expect.poll(async () => holdersOf('queue'), { timeout: 10_000 }).toContainEqual({ machine: { name: 'm-claimer' }, derived: true });
  expect(await holdersOf(env.controller)).toEqual([]);
});

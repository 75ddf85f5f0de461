import type { Transaction } from 'kysely';
import { expect, test } from 'vitest';
import type { DB } from '../../../src/store/tables.js';
import { useGateway } from '../../fixtures/gateway.js';
import { aMachine, racedAgainstATransaction } from '../../fixtures/mesh.js';
import { ADD_SEAT_HOLDER, DEFINE_SEAT, HOLD_SEAT, RELEASE_SEAT, RENAME_SEAT, SEAT } from '../../fixtures/operations.js';
import { aTokensFile, startTestGateway } from '../../fixtures/services.js';

const { gw, env } = useGateway('cleanup');

let n = 0;
async function aSeat(): Promise<string> {
  const name = `old-${++n}`;
  const { data } = await gw.gql(DEFINE_SEAT, { input: { name, scope: 'site' } });
  expect(data.defineSeat.__typename).toBe('MutationDefineSeatSuccess');
  return name;
}
const RESULT = `__typename ... on Error { message code }`;
const removeAlias = async (alias: string, why = 'tidying old names') =>
  (
    await gw.gql(
      `mutation($alias: String!, $why: String!) { removeAlias(alias: $alias, why: $why, cause: "cleanup") { ${RESULT} ... on MutationRemoveAliasSuccess { data { name aliases } } } }`,
      { alias, why },
    )
  ).data.removeAlias;
const retireSeat = async (seat: string) =>
  (
    await gw.gql(
      `mutation($seat: String!) { retireSeat(seat: $seat, why: "no module serves it any more") { ${RESULT} ... on MutationRetireSeatSuccess { data { name scope } } } }`,
      { seat },
    )
  ).data.retireSeat;
const forgetMachine = async (machine: string) =>
  (
    await gw.gql(
      `mutation($machine: String!) { forgetMachine(machine: $machine, why: "decommissioned") { ${RESULT} ... on MutationForgetMachineSuccess { data { name site modules } } } }`,
      { machine },
    )
  ).data.forgetMachine;
const lastAct = async () => (await gw.gql(`{ handActs(first: 1) { edges { node { actor act target why cause callId } } } }`)).data.handActs.edges[0].node;
const callOf = async (id: string) => (await gw.gql(`query($id: ID!) { call(id: $id) { verb state door } }`, { id })).data.call;
const seatNamed = async (name: string) => (await gw.gql(SEAT, { name })).data.seat;

test('removeAlias drops a former name, answers the seat it pointed to and leaves a hand-act', async () => {
  const seat = await aSeat();
  await gw.gql(RENAME_SEAT, { from: seat, to: `${seat}-b` });
  await gw.gql(RENAME_SEAT, { from: `${seat}-b`, to: `${seat}-c` });
  expect(await removeAlias(seat)).toEqual({ __typename: 'MutationRemoveAliasSuccess', data: { name: `${seat}-c`, aliases: [`${seat}-b`] } });
  expect(await seatNamed(seat)).toBeNull();
  expect((await seatNamed(`${seat}-b`)).name).toBe(`${seat}-c`);
  const act = await lastAct();
  expect(act).toMatchObject({ actor: 'local', act: 'removeAlias', target: `${seat} (alias of ${seat}-c)`, why: 'tidying old names', cause: 'cleanup' });
  expect(await callOf(act.callId)).toEqual({ verb: 'removeAlias', state: 'OK', door: 'GRAPHQL' });
});

test('removeAlias of a name that is no alias is NotFound, a seat name included, and leaves no hand-act', async () => {
  const seat = await aSeat();
  const before = await lastAct();
  expect(await removeAlias('never-an-alias')).toEqual({ __typename: 'NotFoundError', code: 'NOT_FOUND', message: 'no alias named "never-an-alias"' });
  expect(await removeAlias(seat)).toMatchObject({ __typename: 'NotFoundError', message: `no alias named "${seat}"` });
  expect((await seatNamed(seat)).name).toBe(seat);
  expect(await lastAct()).toEqual(before);
});

test('retireSeat deletes an unheld seat and its aliases, answers it and leaves a hand-act', async () => {
  const seat = await aSeat();
  await gw.gql(RENAME_SEAT, { from: seat, to: `${seat}-now` });
  expect(await retireSeat(seat)).toEqual({ __typename: 'MutationRetireSeatSuccess', data: { name: `${seat}-now`, scope: 'site' } });
  expect(await seatNamed(`${seat}-now`)).toBeNull();
  expect(await seatNamed(seat)).toBeNull();
  expect((await gw.gql(`{ aliases { alias } }`)).data.aliases.map((a: { alias: string }) => a.alias)).not.toContain(seat);
  expect(await lastAct()).toMatchObject({ act: 'retireSeat', target: `${seat}-now`, why: 'no module serves it any more' });
});

test('retireSeat is refused while the seat has a holding, recorded or derived, and then changes nothing', async () => {
  const recorded = await aSeat();
  const machine = await aMachine(gw.mesh.db, { modules: ['broker'] });
  await gw.gql(HOLD_SEAT, { seat: recorded, machine, module: 'broker' });
  expect(await retireSeat(recorded)).toEqual({
    __typename: 'ConflictError',
    code: 'CONFLICT',
    message: `seat "${recorded}" is held: ${recorded} by broker on ${machine}; release it, or stop the modules that claim it, first`,
  });
  const derived = await aSeat();
  const claimer = await aMachine(gw.mesh.db, { modules: ['worker'], claims: { worker: [derived] } });
  expect(await retireSeat(derived)).toMatchObject({
    __typename: 'ConflictError',
    message: `seat "${derived}" is held: ${derived} by worker on ${claimer} (derived from its claim); release it, or stop the modules that claim it, first`,
  });
  expect((await seatNamed(recorded)).holders).toHaveLength(1);
  expect((await seatNamed(derived)).holders).toHaveLength(1);
  // Released, it can be retired.
  await gw.gql(RELEASE_SEAT, { seat: recorded, machine, module: 'broker' });
  expect((await retireSeat(recorded)).__typename).toBe('MutationRetireSeatSuccess');
});

test('retireSeat is refused while a plan not CLOSED names it; once closed, the seat and its plans go, and a plan behind keeps running', async () => {
  const seat = await aSeat();
  const other = await aSeat();
  // push applies only to a seat's holders: the machine claims both seats, then stops claiming `seat`.
  const machine = await aMachine(gw.mesh.db, { modules: ['broker'], claims: { broker: [seat, other] } });
  const push = async (s: string, behind?: string) =>
    (
      await gw.gql(
        `mutation($s: String!, $m: String!, $behind: ID) { push(seat: $s, build: "b-1", tiers: [[$m]], behind: $behind, why: "try it") { ${RESULT} ... on MutationPushSuccess { data { id state } } } }`,
        { s, m: machine, behind },
      )
    ).data.push;
  const plan = (await push(seat)).data;
  await aMachine(gw.mesh.db, { name: machine, modules: ['broker'], claims: { broker: [other] } });
  expect(await retireSeat(seat)).toEqual({
    __typename: 'ConflictError',
    code: 'CONFLICT',
    message: `seat "${seat}" is named by plan "${plan.id}", which is ${plan.state}; close it first`,
  });
  await gw.gql(`mutation($id: ID!) { closePlan(id: $id, why: "done with it") { __typename } }`, { id: plan.id });
  const after = (await push(other, plan.id)).data;
  expect(after.state).toBe('OPEN');
  expect((await retireSeat(seat)).__typename).toBe('MutationRetireSeatSuccess');
  const plans = (await gw.gql(`{ plans(first: 100) { id seat behind state } }`)).data.plans;
  expect(plans.map((p: { id: string }) => p.id)).not.toContain(plan.id);
  expect(plans.find((p: { id: string }) => p.id === after.id)).toMatchObject({ seat: other, behind: null, state: 'OPEN' });
});

test("retireSeat refuses the controller's own seat, by its name and by an alias", async () => {
  const message = `seat "${env.controller}" is the controller's own (MESH_CONTROLLER): its verbs answer on that name, so it cannot be retired`;
  expect(await retireSeat(env.controller)).toEqual({ __typename: 'ConflictError', code: 'CONFLICT', message });
  await gw.mesh.db.insertInto('seat_alias').values({ alias: 'ctl-former', seat: env.controller }).execute();
  try {
    expect(await retireSeat('ctl-former')).toEqual({ __typename: 'ConflictError', code: 'CONFLICT', message });
  } finally {
    await gw.mesh.db.deleteFrom('seat_alias').where('alias', '=', 'ctl-former').execute();
  }
  expect((await seatNamed(env.controller)).name).toBe(env.controller);
});

test('forgetMachine deletes a machine that holds no seat, with its assignments, answers it and leaves a hand-act', async () => {
  const machine = await aMachine(gw.mesh.db, { site: 'eu-9', modules: ['broker', 'cache'] });
  expect(await forgetMachine(machine)).toEqual({
    __typename: 'MutationForgetMachineSuccess',
    data: { name: machine, site: 'eu-9', modules: ['broker', 'cache'] },
  });
  expect((await gw.gql(`query($m: String!) { machine(name: $m) { name } }`, { m: machine })).data.machine).toBeNull();
  expect(await gw.mesh.db.selectFrom('assignment').select('module').where('machine', '=', machine).execute()).toEqual([]);
  expect(await lastAct()).toMatchObject({ act: 'forgetMachine', target: machine, why: 'decommissioned' });
  expect(await forgetMachine(machine)).toEqual({ __typename: 'NotFoundError', code: 'NOT_FOUND', message: `no machine named "${machine}"` });
});

test('forgetMachine is refused while the machine runs a module holding a seat, recorded or derived', async () => {
  const seat = await aSeat();
  const holder = await aMachine(gw.mesh.db, { modules: ['broker'] });
  await gw.gql(HOLD_SEAT, { seat, machine: holder, module: 'broker' });
  expect(await forgetMachine(holder)).toEqual({
    __typename: 'ConflictError',
    code: 'CONFLICT',
    message: `machine "${holder}" holds seats: ${seat} by broker on ${holder}; hand them to another holder or release them first`,
  });
  const claimed = await aSeat();
  const claimer = await aMachine(gw.mesh.db, { modules: ['worker'], claims: { worker: [claimed] } });
  expect(await forgetMachine(claimer)).toMatchObject({ __typename: 'ConflictError', message: expect.stringContaining('(derived from its claim)') });
  expect((await gw.gql(`{ machines { name } }`)).data.machines.map((m: { name: string }) => m.name)).toEqual(expect.arrayContaining([holder, claimer]));
});

test('holdSeat racing the forget of its machine answers NotFound for the machine once the forget commits, never INTERNAL', async () => {
  const seat = await aSeat();
  const machine = await aMachine(gw.mesh.db, { modules: ['broker'] });
  // forgetMachine's own transaction, held open between its locks and its commit: the machine holds
  // nothing, so the forget goes through, while holdSeat runs.
  const forget = {
    locks: async (tx: Transaction<DB>) => {
      await tx.selectFrom('machine').select('name').where('name', '=', machine).forUpdate().execute();
      await tx.selectFrom('assignment').select('module').where('machine', '=', machine).forUpdate().execute();
    },
    commits: (tx: Transaction<DB>) => tx.deleteFrom('machine').where('name', '=', machine).execute(),
  };
  const answer = await racedAgainstATransaction(gw.mesh.db, forget, () => gw.gql(HOLD_SEAT, { seat, machine, module: 'broker' }));
  expect(answer.errors, JSON.stringify(answer.errors)).toBeUndefined();
  expect(answer.data.holdSeat).toEqual({ __typename: 'NotFoundError', code: 'NOT_FOUND', message: `no machine named "${machine}"` });
  expect((await seatNamed(seat)).holders).toEqual([]);
});

test('addSeatHolder racing the retirement of its seat answers NotFound for the seat once the retirement commits, never INTERNAL', async () => {
  const seat = `replicated-${++n}`;
  expect((await gw.gql(DEFINE_SEAT, { input: { name: seat, replicated: true } })).data.defineSeat.__typename).toBe('MutationDefineSeatSuccess');
  const machine = await aMachine(gw.mesh.db, { modules: ['broker'] });
  // retireSeat's own transaction, held open between its lock and its commit.
  const retire = {
    locks: (tx: Transaction<DB>) => tx.selectFrom('seat').select('name').where('name', '=', seat).forUpdate().execute(),
    commits: (tx: Transaction<DB>) => tx.deleteFrom('seat').where('name', '=', seat).execute(),
  };
  const answer = await racedAgainstATransaction(gw.mesh.db, retire, () => gw.gql(ADD_SEAT_HOLDER, { seat, machine, module: 'broker' }));
  expect(answer.errors, JSON.stringify(answer.errors)).toBeUndefined();
  expect(answer.data.addSeatHolder).toEqual({ __typename: 'NotFoundError', code: 'NOT_FOUND', message: `no seat named "${seat}"` });
});

test('over NATS the cleanup verbs need the admin scope, which no NATS user has without MESH_NATS_USERS_FILE', async () => {
  // test/services/access/scopes.test.ts runs them over NATS as a user the users file makes admin.
  const seat = await aSeat();
  await gw.gql(RENAME_SEAT, { from: seat, to: `${seat}-x` });
  const reply = await gw.mesh.bus.nc.request(`${env.subjects}.seat.${env.controller}.removeAlias.ops`, JSON.stringify({ alias: seat, why: 'over NATS' }), {
    timeout: 5000,
  });
  expect(reply.json()).toEqual({ ok: false, error: { code: 'FORBIDDEN', message: 'ops may not run removeAlias: it needs the admin scope' } });
  expect((await seatNamed(seat)).name).toBe(`${seat}-x`);
});

test('the cleanup verbs need the admin scope over GraphQL', async () => {
  const tokens = aTokensFile([
    { name: 'operator', scopes: ['read', 'act'], token: 'act-token' },
    { name: 'keeper', scopes: ['read', 'act', 'admin'], token: 'admin-token' },
  ]);
  const guarded = await startTestGateway({ ...env.env, MESH_TOKENS_FILE: tokens.path });
  try {
    for (const [verb, args] of [
      ['removeAlias', 'alias: "x"'],
      ['retireSeat', 'seat: "x"'],
      ['forgetMachine', 'machine: "x"'],
    ]) {
      const run = (token: string) => guarded.gql(`mutation { ${verb}(${args}, why: "w") { ${RESULT} } }`, undefined, { authorization: `Bearer ${token}` });
      expect((await run('act-token')).data[verb!]).toEqual({
        __typename: 'ForbiddenError',
        code: 'FORBIDDEN',
        message: `operator may not run ${verb}: it needs the admin scope`,
      });
      expect((await run('admin-token')).data[verb!].__typename).toBe('NotFoundError');
    }
  } finally {
    await guarded.stop();
    tokens.remove();
  }
});

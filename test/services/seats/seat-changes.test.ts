import type { Transaction } from 'kysely';
import { expect, test } from 'vitest';
import type { DB } from '../../../src/store/tables.js';
import { natsCall } from '../../fixtures/calls.js';
import { useGateway } from '../../fixtures/gateway.js';
import { aMachine, racedAgainstATransaction } from '../../fixtures/mesh.js';
import { DEFINE_SEAT, RENAME_SEAT, SEAT } from '../../fixtures/operations.js';
import { aTokensFile, startTestGateway, type TestGateway } from '../../fixtures/services.js';

const { gw, env } = useGateway('seatchanges');

let n = 0;
async function aSeat(prefix = 'sc'): Promise<string> {
  const name = `${prefix}-${++n}`;
  const { data } = await gw.gql(DEFINE_SEAT, { input: { name } });
  expect(data.defineSeat.__typename).toBe('MutationDefineSeatSuccess');
  return name;
}
const rename = async (from: string, to: string) => (await gw.gql(RENAME_SEAT, { from, to })).data.renameSeat;

test("the controller's own seat cannot be renamed, by its name or by an alias, and keeps answering its verbs", async () => {
  const controller = env.controller;
  const refusal = {
    __typename: 'ConflictError',
    code: 'CONFLICT',
    message: `seat "${controller}" is the controller's own (MESH_CONTROLLER): its verbs answer on that name, so it cannot be renamed`,
  };
  expect(await rename(controller, `${controller}-moved`)).toEqual(refusal);
  // An alias that resolves to the controller's seat (written as an older build could have) is refused too.
  await gw.mesh.db.insertInto('seat_alias').values({ alias: 'ctl-old-name', seat: controller }).execute();
  expect(await rename('ctl-old-name', `${controller}-moved`)).toEqual(refusal);
  expect((await gw.gql(SEAT, { name: controller })).data.seat.name).toBe(controller);
  expect((await gw.gql(SEAT, { name: `${controller}-moved` })).data.seat).toBeNull();
  await gw.mesh.db.deleteFrom('seat_alias').where('alias', '=', 'ctl-old-name').execute();
  // Its verbs still answer over NATS on its name.
  const reply = await natsCall(gw.mesh.bus.nc, env, 'repeatedCauses', '{}', { user: '', timeoutMs: 5000 });
  expect(reply.body.ok).toBe(true);
  // Another seat is still renamed as before.
  const other = await aSeat();
  expect((await rename(other, `${other}-b`)).__typename).toBe('MutationRenameSeatSuccess');
});

const protocolOf = async (name: string) => {
  const { accepts, emits, serves } = (await gw.gql(`query($name: String!) { seat(name: $name) { accepts emits serves { name acting } } }`, { name })).data.seat;
  return { accepts, emits, serves };
};

test('defineSeat keeps each protocol list it was not given, and replaces only the one given', async () => {
  const seat = await aSeat();
  const full = { accepts: ['job'], emits: ['done'], serves: [{ name: 'run', acting: true }] };
  await gw.gql(DEFINE_SEAT, { input: { name: seat, ...full } });
  expect(await protocolOf(seat)).toEqual(full);
  const served = await gw.gql(DEFINE_SEAT, { input: { name: seat, serves: [{ name: 'peek' }] } });
  expect(served.data.defineSeat.data).toMatchObject({ accepts: ['job'], emits: ['done'], serves: [{ name: 'peek', acting: false, args: [] }] });
  await gw.gql(DEFINE_SEAT, { input: { name: seat, accepts: ['job', 'urgent-job'] } });
  expect(await protocolOf(seat)).toEqual({ accepts: ['job', 'urgent-job'], emits: ['done'], serves: [{ name: 'peek', acting: false }] });
  await gw.gql(DEFINE_SEAT, { input: { name: seat, scope: 'site' } });
  expect(await protocolOf(seat)).toEqual({ accepts: ['job', 'urgent-job'], emits: ['done'], serves: [{ name: 'peek', acting: false }] });
  // The whole protocol given alone still replaces all three.
  await gw.gql(DEFINE_SEAT, { input: { name: seat, protocol: JSON.stringify({ emits: ['only'] }) } });
  expect(await protocolOf(seat)).toEqual({ accepts: [], emits: ['only'], serves: [] });
});

test('defineSeat refuses protocol beside accepts, emits or serves, naming protocol, and changes nothing', async () => {
  const seat = await aSeat();
  await gw.gql(DEFINE_SEAT, { input: { name: seat, accepts: ['a'], emits: ['e'], serves: [{ name: 'v' }] } });
  for (const list of [{ serves: [{ name: 'w' }] }, { accepts: ['b'] }, { emits: [] }]) {
    const { data } = await gw.gql(DEFINE_SEAT, { input: { name: seat, protocol: JSON.stringify({ accepts: ['x'] }), ...list } });
    expect(data.defineSeat).toEqual({
      __typename: 'InvalidError',
      code: 'INVALID',
      field: 'protocol',
      message: `protocol is the whole protocol: give it alone, or give ${Object.keys(list)[0]} without it`,
    });
  }
  expect(await protocolOf(seat)).toEqual({ accepts: ['a'], emits: ['e'], serves: [{ name: 'v', acting: false }] });
});

test('a renamed default seat whose lists are empty reads as the compiled protocol of the default it comes from, at once', async () => {
  const compiled = gw.mesh.catalogue.seats.get('registry')!;
  const want = { accepts: compiled.accepts, emits: compiled.emits, serves: compiled.serves.map(({ name, acting }) => ({ name, acting })) };
  expect((await rename('registry', 'artifacts')).data.name).toBe('artifacts');
  await gw.gql(DEFINE_SEAT, { input: { name: 'artifacts', accepts: [], emits: [], serves: [] } });
  expect(await protocolOf('artifacts')).toEqual(want);
  expect(await protocolOf('registry')).toEqual(want);
  const listed = (await gw.gql(`{ seats { name accepts emits serves { name acting } } }`)).data.seats;
  expect(listed.find((s: { name: string }) => s.name === 'artifacts')).toEqual({ name: 'artifacts', ...want });
  // Renamed twice, it still finds its default through the first name.
  await rename('artifacts', 'artifact-store');
  expect(await protocolOf('artifact-store')).toEqual(want);
  // A seat that was never a default keeps its empty lists empty.
  const plain = await aSeat();
  await rename(plain, `${plain}-b`);
  expect(await protocolOf(`${plain}-b`)).toEqual({ accepts: [], emits: [], serves: [] });
});

test('two defineSeat of one new name at once: the second waits and changes the seat the first made, never INTERNAL', async () => {
  const name = `sc-twice-${++n}`;
  // The first defineSeat's own transaction (its seat inserted), held open while the second runs.
  const first = { locks: (tx: Transaction<DB>) => tx.insertInto('seat').values({ name, scope: 'first' }).execute() };
  const answer = await racedAgainstATransaction(gw.mesh.db, first, () => gw.gql(DEFINE_SEAT, { input: { name, scope: 'second' } }));
  expect(answer.errors, JSON.stringify(answer.errors)).toBeUndefined();
  expect(answer.data.defineSeat).toMatchObject({ __typename: 'MutationDefineSeatSuccess' });
  expect((await gw.gql(`query($name: String!) { seat(name: $name) { name scope } }`, { name })).data.seat).toEqual({ name, scope: 'second' });
});

test('two renames to one new name at once: the second waits and is refused as the name now taken, never INTERNAL', async () => {
  const [first, second] = [await aSeat(), await aSeat()];
  const to = `sc-wanted-${++n}`;
  // The first rename's own transaction (the seat renamed, its old name an alias), held open while the second runs.
  const rename = {
    locks: async (tx: Transaction<DB>) => {
      await tx.updateTable('seat').set({ name: to }).where('name', '=', first).execute();
      await tx.insertInto('seat_alias').values({ alias: first, seat: to }).execute();
    },
  };
  const answer = await racedAgainstATransaction(gw.mesh.db, rename, () => gw.gql(RENAME_SEAT, { from: second, to }));
  expect(answer.errors, JSON.stringify(answer.errors)).toBeUndefined();
  expect(answer.data.renameSeat).toEqual({ __typename: 'ConflictError', code: 'CONFLICT', message: `a seat named "${to}" already exists` });
  expect((await gw.gql(SEAT, { name: second })).data.seat.name).toBe(second);
});

test('reading every seat, or many seats by name, is one statement however many were renamed', async () => {
  const count = async (query: string, variables?: Record<string, unknown>) => {
    gw.statements.reset();
    const { errors } = await gw.gql(query, variables);
    expect(errors).toBeUndefined();
    // The seat and alias reads only: the status composer, asked by the renames' hand-acts, may run beside the request.
    return gw.statements.sql.filter((statement) => statement.includes('"seat".*') || statement.includes('from "seat_alias"')).length;
  };
  const byNames = (names: string[]) => `{ ${names.map((name, i) => `s${i}: seat(name: "${name}") { name serves { name } }`).join(' ')} }`;
  const before = await count(`{ seats { name serves { name } } }`);
  const fewBefore = await count(byNames(['queue']));
  const renamed: string[] = [];
  for (let i = 0; i < 5; i++) {
    const seat = await aSeat('many');
    await rename(seat, `${seat}-r`);
    renamed.push(seat);
  }
  expect(await count(`{ seats { name serves { name } } }`)).toBe(before);
  expect(await count(byNames(['queue', ...renamed]))).toBe(fewBefore);
  expect(fewBefore).toBe(1);
});

const RESULT = `__typename ... on Error { message code } ... on InvalidError { field }`;
const REASONS = `$why: String, $cause: String, $condition: String`;
const GIVEN = `why: $why, cause: $cause, condition: $condition`;
const changes = {
  define: `mutation($input: SeatInput!, ${REASONS}) { defineSeat(input: $input, ${GIVEN}) { ${RESULT} } }`,
  rename: `mutation($from: String!, $to: String!, ${REASONS}) { renameSeat(from: $from, to: $to, ${GIVEN}) { ${RESULT} } }`,
  hold: `mutation($seat: String!, $machine: String!, $module: String!, ${REASONS}) { holdSeat(seat: $seat, machine: $machine, module: $module, ${GIVEN}) { ${RESULT} } }`,
  add: `mutation($seat: String!, $machine: String!, $module: String!, ${REASONS}) { addSeatHolder(seat: $seat, machine: $machine, module: $module, ${GIVEN}) { ${RESULT} } }`,
  release: `mutation($seat: String!, $machine: String!, $module: String!, ${REASONS}) { releaseSeat(seat: $seat, machine: $machine, module: $module, ${GIVEN}) { ${RESULT} } }`,
};
const latestActs = async (gateway: TestGateway, first: number, headers?: Record<string, string>) =>
  (
    await gateway.gql(`query($first: Int) { handActs(first: $first) { edges { node { actor act target why cause condition callId } } } }`, { first }, headers)
  ).data.handActs.edges.map((e: { node: unknown }) => e.node);
const allActs = async () => (await gw.gql(`{ handActs(first: 500) { edges { node { id } } } }`)).data.handActs.edges.length;
const actsThisWeek = async () => (await gw.gql(`{ status { handActsThisWeek } }`)).data.status.handActsThisWeek;

test('every seat change leaves a hand-act naming the caller, the change and its target, listed by handActs and counted in status', async () => {
  const before = await actsThisWeek();
  const seat = `traced-${++n}`;
  const m1 = await aMachine(gw.mesh.db, { modules: ['broker'] });
  const m2 = await aMachine(gw.mesh.db, { modules: ['broker'] });
  const ok = (r: { data?: Record<string, { __typename: string }> }) => expect(Object.values(r.data ?? {})[0]?.__typename).toMatch(/Success$/);
  ok(await gw.gql(changes.define, { input: { name: seat, replicated: true }, why: 'a seat for the job queue', cause: 'capacity', condition: 'queue at 90%' }));
  ok(await gw.gql(changes.rename, { from: seat, to: `${seat}-kv`, why: '  ' }));
  ok(await gw.gql(changes.hold, { seat, machine: m1, module: 'broker', why: 'first holder' }));
  ok(await gw.gql(changes.add, { seat: `${seat}-kv`, machine: m2, module: 'broker', why: 'a second replica', cause: 'capacity' }));
  ok(await gw.gql(changes.release, { seat, machine: m1, module: 'broker' }));
  expect(await latestActs(gw, 5)).toEqual([
    { actor: 'local', act: 'releaseSeat', target: `${seat}-kv by broker on ${m1}`, why: 'not given', cause: null, condition: null, callId: null },
    {
      actor: 'local',
      act: 'addSeatHolder',
      target: `${seat}-kv by broker on ${m2}`,
      why: 'a second replica',
      cause: 'capacity',
      condition: null,
      callId: null,
    },
    { actor: 'local', act: 'holdSeat', target: `${seat}-kv by broker on ${m1}`, why: 'first holder', cause: null, condition: null, callId: null },
    { actor: 'local', act: 'renameSeat', target: `${seat} -> ${seat}-kv`, why: 'not given', cause: null, condition: null, callId: null },
    { actor: 'local', act: 'defineSeat', target: seat, why: 'a seat for the job queue', cause: 'capacity', condition: 'queue at 90%', callId: null },
  ]);
  await expect.poll(actsThisWeek, { timeout: 10_000 }).toBeGreaterThanOrEqual(before + 5);
});

test('a refused seat change leaves no hand-act', async () => {
  const seat = await aSeat();
  const other = await aSeat();
  const machine = await aMachine(gw.mesh.db, { modules: ['broker'] });
  const before = await allActs();
  const refused = [
    await gw.gql(changes.rename, { from: seat, to: other, why: 'onto another seat' }),
    await gw.gql(changes.rename, { from: env.controller, to: 'elsewhere', why: "the controller's own" }),
    await gw.gql(changes.define, { input: { name: seat, protocol: '{}', serves: [] }, why: 'both at once' }),
    await gw.gql(changes.hold, { seat, machine: 'nowhere', module: 'broker', why: 'no such machine' }),
    await gw.gql(changes.add, { seat, machine, module: 'broker', why: 'not replicated' }),
    await gw.gql(changes.release, { seat, machine, module: 'broker', why: 'not on record' }),
    await gw.gql(changes.hold, { seat, machine, module: 'broker', why: 'a cause too long', cause: 'c'.repeat(201) }),
  ];
  expect(refused.map((r) => Object.values(r.data)[0])).toMatchObject([
    { __typename: 'ConflictError' },
    { __typename: 'ConflictError' },
    { __typename: 'InvalidError', field: 'protocol' },
    { __typename: 'NotFoundError' },
    { __typename: 'ConflictError' },
    { __typename: 'NotFoundError' },
    { __typename: 'InvalidError', field: 'cause' },
  ]);
  // The over-long cause was refused before the change: the seat has no holder.
  expect((await gw.gql(SEAT, { name: seat })).data.seat.holders).toEqual([]);
  expect(await allActs()).toBe(before);
});

test("a seat change's hand-act names the token's caller", async () => {
  const tokens = aTokensFile([{ name: 'ops-admin', scopes: ['read', 'act', 'admin'], token: 'admin-token' }]);
  const guarded = await startTestGateway({ ...env.env, MESH_TOKENS_FILE: tokens.path });
  const headers = { authorization: 'Bearer admin-token' };
  try {
    const seat = `by-token-${++n}`;
    const { data } = await guarded.gql(changes.define, { input: { name: seat }, why: 'made by a token' }, headers);
    expect(data.defineSeat.__typename).toBe('MutationDefineSeatSuccess');
    expect((await latestActs(guarded, 1, headers))[0]).toMatchObject({ actor: 'ops-admin', act: 'defineSeat', target: seat, why: 'made by a token' });
  } finally {
    await guarded.stop();
    tokens.remove();
  }
});

test('a seat change between long names still leaves its hand-act, its target cut to a label', async () => {
  const from = `l${'o'.repeat(150)}-${++n}`;
  const to = `${from}-renamed`;
  await gw.gql(DEFINE_SEAT, { input: { name: from } });
  const renamed = await gw.gql(changes.rename, { from, to, why: 'names from a generator' });
  expect(renamed.data.renameSeat.__typename).toBe('MutationRenameSeatSuccess');
  const [act] = await latestActs(gw, 1);
  expect(act).toMatchObject({ act: 'renameSeat', why: 'names from a generator' });
  expect(act.target).toHaveLength(200);
  expect(act.target).toBe(`${`${from} -> ${to}`.slice(0, 199)}…`);
});

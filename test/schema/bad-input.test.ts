import { beforeAll, describe, expect, test } from 'vitest';
import { QUERY_LIMITS } from '../../src/server/http.js';
import { recordHeartbeats } from '../../src/services/machines/machines.js';
import { useGateway } from '../fixtures/gateway.js';
import { aMachine } from '../fixtures/mesh.js';
import { ALIASES, DEFINE_SEAT, HOLD_SEAT, RENAME_SEAT, SEAT } from '../fixtures/operations.js';

const { gw } = useGateway('badinput');
beforeAll(async () => {
  await gw.gql(DEFINE_SEAT, { input: { name: 'kept', scope: 'site' } });
});

const unchanged = async () => {
  expect((await gw.gql(SEAT, { name: 'kept' })).data.seat).toMatchObject({ name: 'kept', aliases: [] });
  expect((await gw.gql(ALIASES)).data.aliases).toEqual([]);
};

describe('a name outside the rule is refused, saying what is wrong, and nothing changes', () => {
  test.each([
    ['blank', '', 'to is blank'],
    ['over 200 characters', 'x'.repeat(201), 'to is 201 characters; at most 200'],
    ['with a dot', 'a.b', `to "a.b" has a dot; names are letters, digits, '-' and '_'`],
    ['with a space', 'a b', `to "a b" has a space; names are letters, digits, '-' and '_'`],
    ['with a star', 'a*', `to "a*" has the character "*"; names are letters, digits, '-' and '_'`],
    ['with a >', 'a>', `to "a>" has the character ">"; names are letters, digits, '-' and '_'`],
  ])('renaming to a name %s', async (_what, to, message) => {
    const { data } = await gw.gql(RENAME_SEAT, { from: 'kept', to });
    expect(data.renameSeat).toEqual({ __typename: 'InvalidError', code: 'INVALID', field: 'to', message });
    await unchanged();
  });

  test('a seat defined with a dotted name', async () => {
    const { data } = await gw.gql(DEFINE_SEAT, { input: { name: 'q.1' } });
    expect(data.defineSeat).toMatchObject({ __typename: 'InvalidError', field: 'name' });
    expect((await gw.gql(SEAT, { name: 'q.1' })).data.seat).toBeNull();
  });

  test('a holder named on a machine with a dot', async () => {
    const { data } = await gw.gql(HOLD_SEAT, { seat: 'kept', machine: 'host.example', module: 'broker' });
    expect(data.holdSeat).toMatchObject({ __typename: 'InvalidError', field: 'machine' });
  });

  test('a heartbeat from a machine whose name has a dot changes nothing', async () => {
    await expect(recordHeartbeats(gw.mesh.db, [{ machine: 'a.b', modules: ['x'], at: new Date() }])).rejects.toThrow(/machine "a.b" has a dot/);
    expect((await gw.gql('{ machines { name } }')).data.machines).toEqual([]);
  });

  test('a holdings query by a name with a star answers a GraphQL error with its code', async () => {
    const { errors } = await gw.gql(`{ holdings(seat: "*") { module } }`);
    expect(errors?.[0]).toMatchObject({ message: `seat "*" has the character "*"; names are letters, digits, '-' and '_'`, extensions: { code: 'INVALID' } });
  });
});

describe('unknown seats and machines', () => {
  test('holding an unknown seat is refused naming it', async () => {
    const machine = await aMachine(gw.mesh.db);
    const { data } = await gw.gql(HOLD_SEAT, { seat: 'ghost', machine, module: 'broker' });
    expect(data.holdSeat).toEqual({ __typename: 'NotFoundError', code: 'NOT_FOUND', message: 'no seat named "ghost"' });
  });

  test('reading an unknown seat or machine answers null', async () => {
    const { data } = await gw.gql(`{ seat(name: "ghost") { name } machine(name: "ghost") { name } }`);
    expect(data).toEqual({ seat: null, machine: null });
  });

  test('a holdings query by an unknown seat answers a GraphQL error naming it', async () => {
    const { errors } = await gw.gql(`{ holdings(seat: "ghost") { module } }`);
    expect(errors?.[0]).toMatchObject({ message: 'no seat named "ghost"', extensions: { code: 'NOT_FOUND' } });
  });
});

describe("a seat's protocol that is not well formed is refused, naming what is wrong", () => {
  test('protocol text that is not JSON', async () => {
    const { data } = await gw.gql(DEFINE_SEAT, { input: { name: 'kept', protocol: '{"serves": [' } });
    expect(data.defineSeat).toMatchObject({ __typename: 'InvalidError', field: 'protocol' });
    expect(data.defineSeat.message).toMatch(/^protocol is not JSON: /);
    await unchanged();
  });

  test('a verb argument of an unknown type', async () => {
    const protocol = JSON.stringify({ serves: [{ name: 'v', args: [{ name: 'a', type: 'Bogus' }] }] });
    const { data } = await gw.gql(DEFINE_SEAT, { input: { name: 'kept', protocol } });
    expect(data.defineSeat.message).toMatch(/^protocol\.serves\.0\.args\.0\.type: /);
  });

  test('a verb named twice', async () => {
    const { data } = await gw.gql(DEFINE_SEAT, { input: { name: 'kept', serves: [{ name: 'v' }, { name: 'v' }] } });
    expect(data.defineSeat).toMatchObject({ __typename: 'InvalidError', message: 'protocol.serves: a verb is named twice' });
    expect((await gw.gql(`{ seat(name: "kept") { serves { name } } }`)).data.seat.serves).toEqual([]);
  });
});

describe('operations too large or deep for one request', () => {
  test('a query nested past the depth limit is refused before it runs', async () => {
    const levels = ['seats', 'holders', 'machine', 'holdings', 'seat', 'holders', 'machine', 'holdings', 'seat', 'holders', 'machine', 'holdings', 'seat'];
    const deep = `{ ${levels.join(' { ')} { name ${' }'.repeat(levels.length)} }`;
    // Defining 'kept' left a hand-act, which asked for a composition: let it land before statements are counted.
    await expect.poll(async () => (await gw.gql('{ status { handActsThisWeek } }')).data?.status?.handActsThisWeek, { timeout: 10_000 }).toBe(1);
    const { count, result } = await gw.statementsOf(() => gw.gql(deep));
    expect(result.errors?.[0]?.message).toMatch(/depth/i);
    expect(result.data).toBeUndefined();
    expect(count).toBe(0);
  });

  test('a query of twenty thousand aliases is refused and the gateway goes on answering', async () => {
    const wide = `{ ${Array.from({ length: 20_000 }, (_, i) => `a${i}: seats { name }`).join(' ')} }`;
    const { errors } = await gw.gql(wide);
    // Refused by the token limit as it is parsed, never run: not any error at all.
    expect(errors).toEqual([{ message: `Syntax Error: Token limit of ${QUERY_LIMITS.tokens} exceeded.`, extensions: { code: 'GRAPHQL_PARSE_FAILED' } }]);
    expect((await gw.gql(SEAT, { name: 'kept' })).data.seat.name).toBe('kept');
  });
});

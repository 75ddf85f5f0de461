import { expect, test } from 'vitest';
import { useGateway } from '../../fixtures/gateway.js';
import { aMachine } from '../../fixtures/mesh.js';
import { ALIASES, DEFINE_SEAT, HOLD_SEAT, RENAME_SEAT, SEAT } from '../../fixtures/operations.js';

const { gw } = useGateway('rename');

let n = 0;
async function aSeat(prefix = 'seat'): Promise<string> {
  const name = `${prefix}-${++n}`;
  const { data } = await gw.gql(DEFINE_SEAT, { input: { name } });
  expect(data.defineSeat.__typename).toBe('MutationDefineSeatSuccess');
  return name;
}
const rename = async (from: string, to: string) => (await gw.gql(RENAME_SEAT, { from, to })).data.renameSeat;
const aliases = async () => (await gw.gql(ALIASES)).data.aliases as { alias: string; seat: string }[];

test('a renamed seat answers to its new name and keeps the old one as an alias', async () => {
  const a = await aSeat();
  expect(await rename(a, `${a}-new`)).toEqual({ __typename: 'MutationRenameSeatSuccess', data: { name: `${a}-new`, aliases: [a] } });
  expect((await gw.gql(SEAT, { name: a })).data.seat.name).toBe(`${a}-new`);
});

test('aliases of the old name follow a second rename', async () => {
  const a = await aSeat();
  await rename(a, `${a}-b`);
  await rename(`${a}-b`, `${a}-c`);
  expect((await aliases()).filter((x) => x.alias.startsWith(a))).toEqual([
    { alias: a, seat: `${a}-c` },
    { alias: `${a}-b`, seat: `${a}-c` },
  ]);
});

test('renaming back does not leave an alias to itself', async () => {
  const a = await aSeat();
  await rename(a, `${a}-b`);
  expect((await rename(`${a}-b`, a)).__typename).toBe('MutationRenameSeatSuccess');
  const mine = (await aliases()).filter((x) => x.alias.startsWith(a));
  expect(mine).toEqual([{ alias: `${a}-b`, seat: a }]);
  expect(mine.some((x) => x.alias === x.seat)).toBe(false);
});

test('renaming through an alias renames the seat it resolves to', async () => {
  const a = await aSeat();
  await rename(a, `${a}-b`);
  expect((await rename(a, `${a}-c`)).data).toEqual({ name: `${a}-c`, aliases: [a, `${a}-b`] });
});

test('a rename to the same name is refused', async () => {
  const a = await aSeat();
  expect(await rename(a, a)).toMatchObject({ __typename: 'InvalidError', code: 'INVALID', field: 'to' });
});

test('a rename of a seat that does not exist is refused', async () => {
  expect(await rename('no-such-seat', 'anything')).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND', message: 'no seat named "no-such-seat"' });
});

test('a rename onto an existing seat is refused and changes nothing', async () => {
  const a = await aSeat();
  const b = await aSeat();
  expect(await rename(a, b)).toMatchObject({ __typename: 'ConflictError', message: `a seat named "${b}" already exists` });
  expect((await gw.gql(SEAT, { name: a })).data.seat).toMatchObject({ name: a, aliases: [] });
});

test("a rename onto another seat's alias is refused", async () => {
  const a = await aSeat();
  const b = await aSeat();
  await rename(b, `${b}-new`);
  expect(await rename(a, b)).toMatchObject({ __typename: 'ConflictError', message: `"${b}" is an alias of seat "${b}-new"` });
});

test('holdings follow a rename', async () => {
  const a = await aSeat();
  const machine = await aMachine(gw.mesh.db, { modules: ['broker'] });
  await gw.gql(HOLD_SEAT, { seat: a, machine, module: 'broker' });
  await rename(a, `${a}-moved`);
  expect((await gw.gql(SEAT, { name: `${a}-moved` })).data.seat.holders).toEqual([
    { machine: { name: machine }, module: 'broker', site: 'eu-1', derived: false },
  ]);
});

test('concurrent renames of one seat run one after the other, leaving no name lost', async () => {
  const a = await aSeat();
  const results = await Promise.all([rename(a, `${a}-x`), rename(a, `${a}-y`)]);
  expect(results.map((r) => r.__typename)).toEqual(['MutationRenameSeatSuccess', 'MutationRenameSeatSuccess']);
  const seat = (await gw.gql(SEAT, { name: a })).data.seat;
  expect([`${a}-x`, `${a}-y`]).toContain(seat.name);
  expect(seat.aliases.sort()).toEqual([a, seat.name === `${a}-x` ? `${a}-y` : `${a}-x`].sort());
});

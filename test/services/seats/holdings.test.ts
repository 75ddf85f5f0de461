import { expect, test } from 'vitest';
import { useGateway } from '../../fixtures/gateway.js';
import { aMachine } from '../../fixtures/mesh.js';
import { ADD_SEAT_HOLDER, DEFINE_SEAT, HOLD_SEAT, RELEASE_SEAT, RENAME_SEAT, SEAT } from '../../fixtures/operations.js';

const { gw } = useGateway('holdings');

let n = 0;
async function aSeat(replicated = false): Promise<string> {
  const name = `seat-${++n}`;
  await gw.gql(DEFINE_SEAT, { input: { name, replicated, scope: 'site' } });
  return name;
}
const holders = async (seat: string) => (await gw.gql(SEAT, { name: seat })).data.seat.holders;

test('holding a seat makes that module its only holder', async () => {
  const seat = await aSeat();
  const m1 = await aMachine(gw.mesh.db, { modules: ['broker'], site: 'eu-1' });
  const m2 = await aMachine(gw.mesh.db, { modules: ['broker'], site: 'us-2' });
  await gw.gql(HOLD_SEAT, { seat, machine: m1, module: 'broker' });
  const { data } = await gw.gql(HOLD_SEAT, { seat, machine: m2, module: 'broker' });
  expect(data.holdSeat.data).toEqual([{ seat: { name: seat }, machine: { name: m2 }, module: 'broker', site: 'us-2', scope: 'site', derived: false }]);
  expect(await holders(seat)).toEqual([{ machine: { name: m2 }, module: 'broker', site: 'us-2', derived: false }]);
});

test('holding a seat replaces every holder of a replicated seat', async () => {
  const seat = await aSeat(true);
  const [m1, m2, m3] = [await aMachine(gw.mesh.db), await aMachine(gw.mesh.db), await aMachine(gw.mesh.db)];
  await gw.gql(ADD_SEAT_HOLDER, { seat, machine: m1, module: 'broker' });
  await gw.gql(ADD_SEAT_HOLDER, { seat, machine: m2, module: 'broker' });
  await gw.gql(HOLD_SEAT, { seat, machine: m3, module: 'broker' });
  expect((await holders(seat)).map((h: { machine: { name: string } }) => h.machine.name)).toEqual([m3]);
});

test('only a module running on the machine can hold a seat', async () => {
  const seat = await aSeat();
  const machine = await aMachine(gw.mesh.db, { modules: ['broker'] });
  const { data } = await gw.gql(HOLD_SEAT, { seat, machine, module: 'builder' });
  expect(data.holdSeat).toMatchObject({ __typename: 'ConflictError', message: `module "builder" is not running on machine "${machine}"` });
  expect(await holders(seat)).toEqual([]);
});

test('a module that stopped running can no longer be handed a seat', async () => {
  const seat = await aSeat();
  const machine = await aMachine(gw.mesh.db, { modules: ['broker', 'builder'] });
  await aMachine(gw.mesh.db, { name: machine, modules: ['broker'] });
  expect((await gw.gql(HOLD_SEAT, { seat, machine, module: 'builder' })).data.holdSeat.__typename).toBe('ConflictError');
});

test('holding a seat on an unknown machine is refused naming the machine', async () => {
  const seat = await aSeat();
  expect((await gw.gql(HOLD_SEAT, { seat, machine: 'nowhere', module: 'broker' })).data.holdSeat).toMatchObject({
    __typename: 'NotFoundError',
    message: 'no machine named "nowhere"',
  });
});

test('adding a holder is for replicated seats only', async () => {
  const seat = await aSeat(false);
  const machine = await aMachine(gw.mesh.db);
  expect((await gw.gql(ADD_SEAT_HOLDER, { seat, machine, module: 'broker' })).data.addSeatHolder).toMatchObject({
    __typename: 'ConflictError',
    message: `seat "${seat}" is not replicated: it has one holder, given with holdSeat`,
  });
});

test('adding a holder twice records it once', async () => {
  const seat = await aSeat(true);
  const [m1, m2] = [await aMachine(gw.mesh.db), await aMachine(gw.mesh.db)];
  await gw.gql(ADD_SEAT_HOLDER, { seat, machine: m1, module: 'broker' });
  await gw.gql(ADD_SEAT_HOLDER, { seat, machine: m2, module: 'broker' });
  const { data } = await gw.gql(ADD_SEAT_HOLDER, { seat, machine: m1, module: 'broker' });
  expect(data.addSeatHolder.data.map((h: { machine: { name: string } }) => h.machine.name)).toEqual([m1, m2].sort());
});

test('releasing the last recorded holder hands the seat back to derivation', async () => {
  const seat = await aSeat();
  const claimer = await aMachine(gw.mesh.db, { modules: ['worker'], claims: { worker: [seat] }, site: 'ap-3' });
  const holder = await aMachine(gw.mesh.db, { modules: ['broker'] });
  await gw.gql(HOLD_SEAT, { seat, machine: holder, module: 'broker' });
  expect(await holders(seat)).toEqual([{ machine: { name: holder }, module: 'broker', site: 'eu-1', derived: false }]);
  const { data } = await gw.gql(RELEASE_SEAT, { seat, machine: holder, module: 'broker' });
  expect(data.releaseSeat.data).toEqual([{ seat: { name: seat }, machine: { name: claimer }, module: 'worker', site: 'ap-3', scope: 'site', derived: true }]);
});

test('releasing a holding that is not on record is refused', async () => {
  const seat = await aSeat();
  const machine = await aMachine(gw.mesh.db);
  expect((await gw.gql(RELEASE_SEAT, { seat, machine, module: 'broker' })).data.releaseSeat.__typename).toBe('NotFoundError');
});

test('a seat with no holding on record is held by every running module that claims it, even by an old name', async () => {
  const seat = await aSeat();
  const m1 = await aMachine(gw.mesh.db, { modules: ['worker'], claims: { worker: [seat] } });
  await gw.gql(RENAME_SEAT, { from: seat, to: `${seat}-now` });
  const m2 = await aMachine(gw.mesh.db, { modules: ['worker'], claims: { worker: [`${seat}-now`] } });
  await aMachine(gw.mesh.db, { modules: ['other'], claims: {} });
  const found = await holders(`${seat}-now`);
  expect(found).toEqual([m1, m2].sort().map((m) => ({ machine: { name: m }, module: 'worker', site: 'eu-1', derived: true })));
});

test('holdings are read by seat alias and by machine with the machine site', async () => {
  const seat = await aSeat();
  const machine = await aMachine(gw.mesh.db, { modules: ['broker'], site: 'sa-1' });
  await gw.gql(HOLD_SEAT, { seat, machine, module: 'broker', scope: 'rack' });
  await gw.gql(RENAME_SEAT, { from: seat, to: `${seat}-b` });
  const bySeat = await gw.gql(`query($s: String) { holdings(seat: $s) { seat { name } machine { name } site scope } }`, { s: seat });
  expect(bySeat.data.holdings).toEqual([{ seat: { name: `${seat}-b` }, machine: { name: machine }, site: 'sa-1', scope: 'rack' }]);
  const byMachine = await gw.gql(`query($m: String!) { holdings(machine: $m) { seat { name } } machine(name: $m) { holdings { seat { name } } } }`, {
    m: machine,
  });
  expect(byMachine.data.holdings).toEqual([{ seat: { name: `${seat}-b` } }]);
  expect(byMachine.data.machine.holdings).toEqual([{ seat: { name: `${seat}-b` } }]);
});

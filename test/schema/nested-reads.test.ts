import { expect, test } from 'vitest';
import { recordHeartbeats } from '../../src/services/machines/machines.js';
import { defineSeat } from '../../src/services/seats/define.js';
import { holdSeat } from '../../src/services/seats/holdings.js';
import { useGateway } from '../fixtures/gateway.js';

const { gw } = useGateway('nested');

const NESTED = `{ seats { name aliases holders { module derived machine { name state modules holdings { seat { name aliases } } } } } }`;

/** Grows the mesh to `machines` machines, half holding a seat on record, half claiming one. */
async function growMesh(from: number, to: number) {
  const { db, catalogue } = gw.mesh;
  const beats = [];
  for (let i = from; i < to; i++) {
    await defineSeat(db, catalogue, { name: `s${i}` });
    beats.push({ machine: `m${i}`, site: `site-${i % 3}`, modules: ['broker', 'worker'], claims: { worker: [`c${i}`] }, at: new Date() });
    await defineSeat(db, catalogue, { name: `c${i}` });
  }
  await recordHeartbeats(db, beats);
  for (let i = from; i < to; i++) await holdSeat(db, catalogue, { seat: `s${i}`, machine: `m${i}`, module: 'broker' });
}

async function statementsFor(query: string): Promise<{ count: number; holders: number }> {
  const { count, result } = await gw.statementsOf(() => gw.gql(query));
  expect(result.errors).toBeUndefined();
  return { count, holders: result.data.seats.flatMap((s: { holders: unknown[] }) => s.holders).length };
}

test('nested reads of seats, holders, machines and their holdings run a fixed number of SQL statements', async () => {
  await growMesh(0, 5);
  const small = await statementsFor(NESTED);
  await growMesh(5, 60);
  const large = await statementsFor(NESTED);
  expect(large.holders).toBeGreaterThan(small.holders * 10);
  expect(large.count).toBe(small.count);
  expect(large.count).toBeLessThanOrEqual(6);
});

test("a nested read of holders' machines by name and site is answered by the holdings without reading machines, and a wider selection still gets every field", async () => {
  await growMesh(60, 65);
  const { count, sql, result: brief } = await gw.statementsOf(() => gw.gql('{ seats { name holders { module machine { name site } } } }'));
  expect(brief.errors).toBeUndefined();
  // The seats, then their holdings (which join each machine for its site): two statements.
  expect(sql.filter((s) => /from "machine" as "m"/.test(s))).toEqual([]);
  expect(count).toBe(2);
  const held = brief.data.seats.find((s: { name: string }) => s.name === 's61').holders;
  expect(held).toEqual([{ module: 'broker', machine: { name: 'm61', site: 'site-1' } }]);

  // The same machines asked with modules beside a brief selection elsewhere: each answered in full where asked.
  const mixed = await gw.gql(
    `{ seat(name: "s61") { holders { machine { name site } } } machine(name: "m61") { name modules state } holdings(seat: "s61") { machine { name modules } } }`,
  );
  expect(mixed.errors).toBeUndefined();
  expect(mixed.data.seat.holders).toEqual([{ machine: { name: 'm61', site: 'site-1' } }]);
  expect(mixed.data.machine).toEqual({ name: 'm61', modules: ['broker', 'worker'], state: 'UP' });
  expect(mixed.data.holdings).toEqual([{ machine: { name: 'm61', modules: ['broker', 'worker'] } }]);
});

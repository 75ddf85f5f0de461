import { beforeAll, expect, test } from 'vitest';
import { recordHeartbeats } from '../../src/services/machines/machines.js';
import { defineSeat } from '../../src/services/seats/define.js';
import { holdSeat } from '../../src/services/seats/holdings.js';
import { useGateway } from '../fixtures/gateway.js';

const { gw } = useGateway('lookahead');
beforeAll(async () => {
  const { db, catalogue } = gw.mesh;
  const beats = [];
  for (let i = 0; i < 12; i++) {
    await defineSeat(db, catalogue, { name: `s${i}`, replicated: true });
    beats.push({ machine: `m${i}`, site: `site-${i % 3}`, modules: ['broker', 'worker'], claims: { worker: [`c${i}`] }, at: new Date() });
    await defineSeat(db, catalogue, { name: `c${i}` });
  }
  await recordHeartbeats(db, beats);
  for (let i = 0; i < 12; i++) await holdSeat(db, catalogue, { seat: `s${i}`, machine: `m${i}`, module: 'broker' });
});

async function answer(query: string) {
  const { count, result } = await gw.statementsOf(() => gw.gql(query));
  expect(result.errors).toBeUndefined();
  return { data: result.data, statements: count };
}

// The look-ahead reads the next level early only for fields it sees directly; through fragments the
// level is read when first reached. The answer must not depend on which path served it.
test('a nested read answers the same whether its fields are asked directly or through fragments', async () => {
  const direct = await answer(`{ seats { name holders { module derived machine { name site state holdings { seat { name } module } } } } }`);
  const fragments = await answer(`
    query { seats { ...S } }
    fragment S on Seat { name holders { ... on Holding { module derived machine { ...M } } } }
    fragment M on Machine { name site state holdings { seat { name } module } }`);
  expect(fragments.data).toEqual(direct.data);
  const holders = direct.data.seats.flatMap((s: { holders: unknown[] }) => s.holders);
  expect(holders.length).toBeGreaterThanOrEqual(24);
  expect(fragments.statements).toBe(direct.statements);
});

test('machines with their holdings, read by look-ahead, name the seats each machine holds', async () => {
  const { data, statements } = await answer(`{ machines { name holdings { seat { name } module derived } } }`);
  const m3 = data.machines.find((m: { name: string }) => m.name === 'm3');
  expect(m3.holdings).toEqual([
    { seat: { name: 'c3' }, module: 'worker', derived: true },
    { seat: { name: 's3' }, module: 'broker', derived: false },
  ]);
  expect(statements).toBeLessThanOrEqual(3);
});

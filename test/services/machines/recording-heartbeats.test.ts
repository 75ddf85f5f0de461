import { sql } from 'kysely';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { recordHeartbeats } from '../../../src/services/machines/machines.js';
import { aMachine, aStatementWaitsNow } from '../../fixtures/mesh.js';
import { freshStore } from '../../fixtures/services.js';

// Heartbeats are the hot path: a batch of them must not wait on a seat being held on one of its
// machines (holdSeat key-share locks the machine so that a forget cannot delete it meanwhile).

let store: Awaited<ReturnType<typeof freshStore>>;
beforeAll(async () => {
  store = await freshStore('heartbeats');
});
afterAll(async () => {
  await store?.close();
});

test('a batch of heartbeats is recorded while a seat hold on one of its machines is in flight, without waiting for it', async () => {
  const held = await aMachine(store.db, { modules: ['broker'] });
  const other = await aMachine(store.db, { modules: ['broker'] });
  let recorded: Promise<unknown> | undefined;
  let waitedOnALock = false;
  await store.db.transaction().execute(async (tx) => {
    // What holdSeat takes on the machine and its assignment before it writes the holding.
    await sql`select name from machine where name = ${held} for key share`.execute(tx);
    await sql`select running from assignment where machine = ${held} and module = 'broker' for key share`.execute(tx);
    let done = false;
    recorded = recordHeartbeats(
      store.db,
      [held, other].map((machine) => ({ machine, site: 'eu-1', modules: ['broker'], at: new Date() })),
    ).finally(() => {
      done = true;
    });
    recorded.catch(() => undefined); // answered below, after the commit
    // Until the batch is recorded, or is seen parked behind this transaction's locks.
    while (!done && !waitedOnALock) waitedOnALock = await aStatementWaitsNow(store.db);
  });
  await recorded;
  expect(waitedOnALock).toBe(false);
  const { rows } = await sql<{ heartbeats: number }>`select heartbeats from machine where name in (${held}, ${other}) order by name`.execute(store.db);
  expect(rows.map((r) => r.heartbeats)).toEqual([2, 2]);
});

import { sql } from 'kysely';
import { expect, test } from 'vitest';
import { isStoreUnavailable } from '../../src/kernel/errors.js';
import { SQLSTATE, sqlStateOf } from '../../src/kernel/sqlstate.js';
import { openStore, STORE_IDLE_IN_TRANSACTION_MS } from '../../src/store/db.js';
import { freshStore } from '../fixtures/services.js';

const ADMIN_DATABASE_URL = process.env.TEST_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

// A replica frozen in the middle of a transaction (SIGSTOP, a suspended VM) must not hold the
// rows it locked, and with them every other replica's heartbeat writes, for as long as it stays
// frozen: PostgreSQL ends its session once the transaction has waited STORE_IDLE_IN_TRANSACTION_MS.
test('a transaction left waiting between statements is ended by PostgreSQL, its row locks with it, and it fails when it goes on', async () => {
  const store = await freshStore('idle_transaction');
  try {
    await store.db.insertInto('machine').values({ name: 'locked-1' }).execute();
    let woke = false;
    let otherWent = () => {};
    const otherWrote = new Promise<void>((resolve) => (otherWent = resolve));
    let tookLock = () => {};
    const locked = new Promise<void>((resolve) => (tookLock = resolve));
    let cap: NodeJS.Timeout | undefined;
    const frozen = store.db.transaction().execute(async (tx) => {
      await tx.selectFrom('machine').select('name').where('name', '=', 'locked-1').forUpdate().execute();
      tookLock();
      // Frozen: nothing sent to PostgreSQL until the other writer went through (which it can only
      // once PostgreSQL ended this session), or at most 3 s longer than PostgreSQL allows.
      await Promise.race([otherWrote, new Promise((resolve) => (cap = setTimeout(resolve, STORE_IDLE_IN_TRANSACTION_MS + 3_000)))]);
      clearTimeout(cap);
      woke = true;
      await tx.updateTable('machine').set({ heartbeats: 99 }).where('name', '=', 'locked-1').execute();
    });
    frozen.catch(() => undefined);
    // The other writer starts only once the frozen transaction holds the row: started together,
    // it could win the row first and never wait (what failed once, Node 22 in CI).
    await Promise.race([locked, frozen]);
    const waitFrom = Date.now();
    // Another writer waits on the lock, and gets it once the frozen session is ended, before the frozen one wakes.
    await store.db.updateTable('machine').set({ heartbeats: 1 }).where('name', '=', 'locked-1').execute();
    expect(woke).toBe(false);
    expect(Date.now() - waitFrom).toBeGreaterThanOrEqual(STORE_IDLE_IN_TRANSACTION_MS - 100);
    otherWent();
    await expect(frozen).rejects.toThrow(/connection|idle-in-transaction|terminat/i);
    const row = await store.db.selectFrom('machine').select('heartbeats').where('name', '=', 'locked-1').executeTakeFirstOrThrow();
    expect(Number(row.heartbeats)).toBe(1);
  } finally {
    await store.close();
  }
}, 30_000);

// Seen at a million machines on two cores (docs/BENCHMARKS.md): a replica starved of CPU left its
// news batches' transactions idle past the bound, PostgreSQL ended them, and all the gateway said
// was that the store was unavailable. The store was up; the replica was slow. It says so now.
test('a transaction left idle past the bound is ended by PostgreSQL, and the store says that is what happened, not that it is gone', async () => {
  const ended: unknown[] = [];
  const db = await openStore({ databaseUrl: ADMIN_DATABASE_URL, dataDir: '.mesh', onTransactionEndedIdle: (error) => ended.push(error) });
  try {
    const failure = await db
      .transaction()
      .execute(async (tx) => {
        await sql`select 1`.execute(tx);
        await new Promise((resolve) => setTimeout(resolve, STORE_IDLE_IN_TRANSACTION_MS + 700));
        await sql`select 2`.execute(tx);
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failure).toBeDefined();
    // The statement after the gap cannot tell why: it reads as the store gone, and its batch is tried again.
    expect(isStoreUnavailable(failure)).toBe(true);
    expect(ended.map(sqlStateOf)).toEqual([SQLSTATE.idleInTransactionTimeout]);
    // The store itself answers.
    expect((await sql<{ one: number }>`select 1 as one`.execute(db)).rows).toEqual([{ one: 1 }]);
  } finally {
    await db.destroy();
  }
}, 30_000);

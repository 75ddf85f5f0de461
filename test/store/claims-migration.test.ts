import { type Kysely, type Migration, Migrator } from 'kysely';
import { afterAll, beforeAll, expect, test } from 'vitest';
import * as store0001 from '../../migrations/0001_store.js';
import * as store0002 from '../../migrations/0002_plan_stop_reason.js';
import * as store0003 from '../../migrations/0003_machine_written_at.js';
import * as store0004 from '../../migrations/0004_name_order_indexes.js';
import { recordHeartbeats } from '../../src/services/machines/machines.js';
import { compiledCatalogue } from '../../src/services/seats/catalogue.js';
import { defineSeat } from '../../src/services/seats/define.js';
import { type Holding, holdSeat, listHoldings } from '../../src/services/seats/holdings.js';
import { holdingCursor, pageHoldings, pageSeats } from '../../src/services/seats/pages.js';
import { renameSeat } from '../../src/services/seats/rename.js';
import { openStore } from '../../src/store/db.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import type { DB } from '../../src/store/tables.js';
import { freshDatabase } from '../fixtures/services.js';

// A store in use before migrations/0005_claims_by_name.ts (claims and holdings already written)
// gets the claims by name and `held_on_record` filled in when it migrates: its pages read what
// its plain lists read, with nothing written again.
let database: Awaited<ReturnType<typeof freshDatabase>>;
let db: Kysely<DB>;
const catalogue = compiledCatalogue('migration-test', []);

beforeAll(async () => {
  database = await freshDatabase('claims_migration');
  db = await openStore({ databaseUrl: database.url, dataDir: '.mesh' });
  const before0005: Record<string, Migration> = {
    '0001_store': store0001,
    '0002_plan_stop_reason': store0002,
    '0003_machine_written_at': store0003,
    '0004_name_order_indexes': store0004,
  };
  const { error } = await new Migrator({ db, provider: { getMigrations: async () => before0005 } }).migrateToLatest();
  expect(error).toBeUndefined();
});
afterAll(async () => {
  await db?.destroy();
  await database?.drop();
});

const key = (h: Holding) => `${h.seat} ${h.machine} ${h.module}${h.derived ? ' derived' : ''}`;

test('a store written before the claims were kept by name pages its holdings and held seats as its plain lists once migrated', async () => {
  for (const seat of ['alpha', 'beta', 'gamma', 'delta', 'epsilon']) await defineSeat(db, catalogue, { name: seat });
  await renameSeat(db, catalogue, 'delta', 'delta-2'); // `delta` is an alias now
  const at = new Date();
  await recordHeartbeats(db, [
    { machine: 'm-1', modules: ['a', 'b'], claims: { a: ['alpha', 'delta'], b: ['beta'] }, at },
    { machine: 'm-2', modules: ['a'], claims: { a: ['alpha', 'delta-2', 'delta'] }, at },
    { machine: 'm-3', modules: ['a', 'c'], claims: { a: ['gamma'], c: ['beta'] }, at },
  ]);
  // m-3's `c` stops: its claim of beta no longer counts.
  await recordHeartbeats(db, [{ machine: 'm-3', modules: ['a'], claims: { a: ['gamma'] }, at: new Date(at.getTime() + 1) }]);
  await holdSeat(db, catalogue, { seat: 'gamma', machine: 'm-1', module: 'a' });
  const plain = (await listHoldings(db)).map(key);
  expect(plain).toEqual(['alpha m-1 a derived', 'alpha m-2 a derived', 'beta m-1 b derived', 'delta-2 m-1 a derived', 'delta-2 m-2 a derived', 'gamma m-1 a']);

  await migrateToLatest(db);

  expect((await pageHoldings(db, {}, { limit: 100 })).map(key)).toEqual(plain);
  const onePerPage: string[] = [];
  let after: Holding | undefined;
  for (;;) {
    const [holding] = await pageHoldings(db, {}, { limit: 1, after: after && holdingCursor(after) });
    if (!holding) break;
    onePerPage.push(key(holding));
    after = holding;
  }
  expect(onePerPage).toEqual(plain);
  expect((await pageHoldings(db, { machines: ['m-2'] }, { limit: 100 })).map(key)).toEqual(['alpha m-2 a derived', 'delta-2 m-2 a derived']);
  expect((await pageSeats(db, catalogue, { held: true }, { limit: 100 })).map((s) => s.name)).toEqual(['alpha', 'beta', 'delta-2', 'gamma']);
  expect((await pageSeats(db, catalogue, { held: false }, { limit: 100 })).map((s) => s.name)).toEqual(['epsilon']);
});

import { openStore } from '../src/store/db.js';
import { migrateToLatest } from '../src/store/migrate.js';
import { freshDatabase, MIGRATED_TEMPLATE } from './fixtures/services.js';

/**
 * vitest's global setup: one database migrated once for the run, which `testEnv` and `freshStore`
 * copy for each file (`create database … template …`) instead of migrating a new one: a copy cost
 * 0.13 CPU-s of the machine where creating and migrating cost 0.31 (ten of each, 2026-12-02), for
 * some ninety databases a run. The workers learn its name from the environment they inherit;
 * files that start a gateway on an empty database (`freshDatabase`) still see it migrate.
 * Removed after the run.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const template = await freshDatabase('template');
  const db = await openStore({ databaseUrl: template.url, dataDir: '.mesh' });
  try {
    await migrateToLatest(db);
  } finally {
    await db.destroy();
  }
  process.env[MIGRATED_TEMPLATE] = template.name;
  return async () => {
    delete process.env[MIGRATED_TEMPLATE];
    await template.drop();
  };
}

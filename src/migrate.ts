import { loadConfig } from './config.js';
import { openStore } from './store/db.js';
import { migrateToLatest } from './store/migrate.js';

// `npm run migrate`: applies every pending migration to the configured store and says which.
const config = loadConfig();
const db = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
try {
  const results = await migrateToLatest(db);
  if (results.length === 0) console.log('the store is at the latest migration');
  for (const r of results) console.log(`${r.status === 'Success' ? 'applied' : r.status}: ${r.migrationName}`);
} catch (error) {
  console.error((error as Error).message);
  process.exitCode = 1;
} finally {
  await db.destroy();
}

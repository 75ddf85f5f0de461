import { promises as fs } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FileMigrationProvider, Migrator, type Kysely, type MigrationResultSet } from 'kysely';

// From src/store (tsx) and from dist/src/store (compiled) alike, migrations/ is two levels up.
const MIGRATIONS = fileURLToPath(new URL('../../migrations', import.meta.url));

export class MigrationError extends Error {
  override name = 'MigrationError';
}

/** Brings the store to the latest migration; throws MigrationError naming the one that failed. */
export async function migrateToLatest(db: Kysely<any>): Promise<NonNullable<MigrationResultSet['results']>> {
  const migrator = new Migrator({
    db,
    provider: new FileMigrationProvider({ fs, path, migrationFolder: MIGRATIONS }),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new MigrationError(`migration ${failed} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return results ?? [];
}

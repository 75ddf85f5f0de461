import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type Kysely, type Migration, type MigrationProvider, type MigrationResultSet, Migrator } from 'kysely';

// From src/store (tsx, vitest) and from dist/src/store (compiled) alike, migrations/ is two levels up.
const MIGRATIONS = fileURLToPath(new URL('../../migrations', import.meta.url));

class MigrationError extends Error {
  override name = 'MigrationError';
}

/**
 * The numbered files of migrations/, imported from here rather than from inside Kysely so that
 * whatever loads this module (node, tsx, vitest) also loads them.
 */
class MigrationFolder implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(MIGRATIONS)).filter((f) => /^\d+_.*\.(js|ts)$/.test(f) && !f.endsWith('.d.ts')).sort();
    const migrations: Record<string, Migration> = {};
    for (const file of files) {
      migrations[file.replace(/\.(js|ts)$/, '')] = (await import(pathToFileURL(join(MIGRATIONS, file)).href)) as Migration;
    }
    return migrations;
  }
}

/** Brings the store to the latest migration; throws MigrationError naming the one that failed. */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and take the store untyped (Kysely's own advice).
export async function migrateToLatest(db: Kysely<any>): Promise<NonNullable<MigrationResultSet['results']>> {
  const migrator = new Migrator({ db, provider: new MigrationFolder() });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new MigrationError(`migration ${failed} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return results ?? [];
}

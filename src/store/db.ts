import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Kysely, type LogEvent, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { DB } from './tables.js';

export type Store = Kysely<DB>;

export interface StoreOptions {
  /** PostgreSQL through `pg`; unset: embedded PGlite in `<dataDir>/pg`. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** Called once per SQL statement executed; tests count statements with it. */
  onQuery?: (sql: string) => void;
  onError?: (error: unknown, sql: string) => void;
}

// Postgres returns bigint and numeric as strings by default; counts and sums here fit a double.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));

/** Opens the store: PostgreSQL when a URL is given, otherwise embedded PGlite on disk. */
export async function openStore(options: StoreOptions): Promise<Store> {
  const log = (event: LogEvent) => {
    if (event.level === 'query') options.onQuery?.(event.query.sql);
    else options.onError?.(event.error, event.query.sql);
  };
  if (options.databaseUrl) {
    // JIT off: the holdings query's estimates (a JSON array per assignment) make Postgres spend far
    // longer compiling it (~0.5 s) than running it, on every composition.
    const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 10, options: '-c jit=off' });
    return new Kysely<DB>({ dialect: new PostgresDialect({ pool }), log });
  }
  const dir = join(options.dataDir, 'pg');
  mkdirSync(dir, { recursive: true });
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGliteDialect } = await import('kysely-pglite-dialect');
  const pglite = await PGlite.create(dir);
  return new Kysely<DB>({ dialect: new PGliteDialect(pglite), log });
}

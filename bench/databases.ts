import pg from 'pg';

/** The PostgreSQL the benches make their databases in (the machine's, as the tests use it). */
export const ADMIN_URL = process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Runs one statement as the admin (create or drop a bench's database), on a connection of its own. */
export async function admin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

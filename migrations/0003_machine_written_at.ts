import type { Kysely } from 'kysely';

// When a gateway last wrote a machine's heartbeat, by the gateway's clock (a beat's own `at` is the
// agent's): a late-heartbeat gap is the machine's only if a gateway was running since that write.
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and take the store untyped (Kysely's own advice).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('machine').addColumn('written_at', 'timestamptz').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and take the store untyped (Kysely's own advice).
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('machine').dropColumn('written_at').execute();
}

import type { Kysely } from 'kysely';

// Why a plan stopped, in a sentence an operator reads: a failed report, a time-out, or the `why`
// of stopPlan. Null while the plan has not stopped, and again once it is resumed.
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and take the store untyped (Kysely's own advice).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('plan').addColumn('stop_reason', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and take the store untyped (Kysely's own advice).
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('plan').dropColumn('stop_reason').execute();
}

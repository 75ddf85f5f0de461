import type { Kysely } from 'kysely';

// The secret the replicas share through the store, to prove to each other that a message on NATS is
// one of theirs (docs/deploy.md, "Replicas prove what they publish"): a status composition, later a
// forwarded caller's identity. One row per key; the newest active one (`active_at` passed) signs, a
// newer one is announced (believed, not yet used: every replica reads it before it is used), the one
// before stays valid for a grace period after a rotation. The key itself is made by the first replica to start
// (src/services/access/replica-key.ts), never by this migration, so no two stores share one.
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and take the store untyped (Kysely's own advice).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('replica_key')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('secret', 'bytea', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(db.fn('now')))
    .addColumn('active_at', 'timestamptz', (c) => c.notNull().defaultTo(db.fn('now')))
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and take the store untyped (Kysely's own advice).
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('replica_key').execute();
}

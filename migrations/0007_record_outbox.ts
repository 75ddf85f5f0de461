import { type Kysely, sql } from 'kysely';

// The records an act leaves (its hand-act, its call's end) are written here in the act's own
// transaction, then relayed to their NATS bucket by whichever replica is alive
// (src/services/outbox/outbox.ts): an act never stands without its record, whatever NATS does
// between the commit and the put. `bucket` names the bucket ('handActs' or 'calls'), `id` the
// record's key there (a put by id is idempotent), `body` its JSON. A relay claims rows with
// `for update skip locked` and a lease (`claimed_until`): a replica that dies mid-relay frees them
// when the lease lapses. `seq` keeps the order records were written in.
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and take the store untyped (Kysely's own advice).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table record_outbox (
    seq bigint generated always as identity primary key,
    bucket text not null check (bucket in ('handActs', 'calls')),
    id text not null,
    body text not null,
    written_at timestamptz not null default now(),
    claimed_until timestamptz
  )`.execute(db);
  await sql`create index record_outbox_bucket_id on record_outbox (bucket, id)`.execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and take the store untyped (Kysely's own advice).
export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists record_outbox`.execute(db);
}

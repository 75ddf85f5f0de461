import { type Kysely, sql } from 'kysely';

// Pages of machines and seats are read in name order by code unit (COLLATE "C", whatever the
// database's own collation), after a cursor and within a name prefix: one index range scan each,
// never a sort of the whole table (docs/BENCHMARKS.md shows the plans at 100,000 machines).
// Holdings on record are paged by seat, machine and module the same way; a seat's derived holders
// are found through the running modules' claims (GIN: `claims ?| names`), not by expanding every
// module's claims.
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and take the store untyped (Kysely's own advice).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index machine_name_c on machine (name collate "C")`.execute(db);
  await sql`create index machine_site_name_c on machine (site, name collate "C")`.execute(db);
  await sql`create index seat_name_c on seat (name collate "C")`.execute(db);
  await sql`create index seat_holding_key_c on seat_holding (seat collate "C", machine collate "C", module collate "C")`.execute(db);
  await sql`create index assignment_running_claims on assignment using gin (claims) where running`.execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and take the store untyped (Kysely's own advice).
export async function down(db: Kysely<any>): Promise<void> {
  for (const index of ['assignment_running_claims', 'seat_holding_key_c', 'seat_name_c', 'machine_site_name_c', 'machine_name_c'])
    await sql`drop index if exists ${sql.id(index)}`.execute(db);
}

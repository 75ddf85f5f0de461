import { type Kysely, sql } from 'kysely';

// The news stream's machines are cut into 64 partitions by a hash of the message's subject
// (src/services/news/partitions.ts); each is written by one live replica at a time (issue 37). A row
// per partition: `owner`, the replica writing it (null: none, free to take); `written_seq`, the news
// stream's sequence up to which every message of the partition is written (null: never written,
// the first owner starts from where the stream's news is not yet written). A replica taking a
// partition reads the stream from `written_seq` + 1, so nothing written is lost and little is
// written twice. The 64 is frozen here as the rows; the code's NEWS_PARTITIONS must match.
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and take the store untyped (Kysely's own advice).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table news_partition (
    partition integer primary key check (partition >= 0 and partition < 64),
    owner text,
    written_seq bigint
  )`.execute(db);
  await sql`insert into news_partition (partition) select generate_series(0, 63)`.execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and take the store untyped (Kysely's own advice).
export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists news_partition`.execute(db);
}

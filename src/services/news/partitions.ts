import { sql } from 'kysely';
import { fnv1a } from '../../kernel/fnv.js';
import type { Store } from '../../store/db.js';

/**
 * The news is written in this many partitions (issue 37), each by one live replica at a time: enough
 * that two or three replicas each get an even share, few enough that a replica records every one it
 * owns in one statement. Fixed by the store's rows (migrations/0009_news_partition.ts).
 */
export const NEWS_PARTITIONS = 64;

/** The partition a news message belongs to: by its subject, so a machine's news (beats and reports) stays in one, in order. */
export const partitionOf = (subject: string): number => fnv1a(subject) % NEWS_PARTITIONS;

/**
 * Which replica each partition belongs to among the live ones: rendezvous hashing (the highest
 * hash of partition and replica wins), so every replica that sees the same live set picks the same
 * owners, and a replica that comes or goes moves only its own share.
 */
export function partitionOwners(live: readonly string[]): string[] {
  const owners: string[] = [];
  for (let p = 0; p < NEWS_PARTITIONS; p++) {
    let best: string | undefined;
    let bestScore = -1;
    for (const replica of live) {
      const score = fnv1a(`${p}/${replica}`);
      if (score > bestScore || (score === bestScore && best !== undefined && replica < best)) {
        best = replica;
        bestScore = score;
      }
    }
    owners.push(best ?? '');
  }
  return owners;
}

/** A partition this replica took, and the stream sequence up to which it is written. */
export interface PartitionTaken {
  partition: number;
  writtenSeq: number;
}

/**
 * Takes for `me` those of `wanted` that no live replica writes (no owner, this one, or one whose
 * lease is gone): a live owner gives a partition up itself (`givePartitionsUp`) once what it
 * holds of it is written, so nothing is written twice. A partition never written starts at
 * `neverWrittenSeq`. Returns the ones taken.
 */
export async function takePartitions(
  db: Store,
  me: string,
  wanted: readonly number[],
  live: readonly string[],
  neverWrittenSeq: number,
): Promise<PartitionTaken[]> {
  if (wanted.length === 0) return [];
  const rows = await db
    .updateTable('news_partition')
    .set({ owner: me, written_seq: sql<number>`coalesce(written_seq, ${neverWrittenSeq})` })
    .where('partition', 'in', wanted)
    .where((eb) => eb.or([eb('owner', 'is', null), eb('owner', '=', me), eb('owner', 'not in', [...live, me])]))
    .returning(['partition', 'written_seq'])
    .execute();
  return rows.map((r) => ({ partition: r.partition, writtenSeq: Number(r.written_seq) }));
}

/**
 * Records that `partitions` are written up to `seq` (never lowering a partition's mark). Returns
 * those still this replica's: one missing was taken by another replica that saw this one's lease
 * gone (it froze), and this replica must stop writing it.
 */
export async function recordPartitionsWritten(db: Store, me: string, partitions: readonly number[], seq: number): Promise<number[]> {
  if (partitions.length === 0) return [];
  const rows = await db
    .updateTable('news_partition')
    .set({ written_seq: sql<number>`greatest(coalesce(written_seq, 0), ${seq})` })
    .where('partition', 'in', partitions)
    .where('owner', '=', me)
    .returning('partition')
    .execute();
  return rows.map((r) => r.partition);
}

/** Gives up `partitions`, written up to `seq`: the next owner reads the stream from there. */
export async function givePartitionsUp(db: Store, me: string, partitions: readonly number[], seq: number): Promise<void> {
  if (partitions.length === 0) return;
  await db
    .updateTable('news_partition')
    .set({ owner: null, written_seq: sql<number>`greatest(coalesce(written_seq, 0), ${seq})` })
    .where('partition', 'in', partitions)
    .where('owner', '=', me)
    .execute();
}

/**
 * The stream sequence up to which every partition is written: the lowest mark. Undefined when some
 * partition was never written (no replica has taken it yet).
 */
export async function newsWrittenThrough(db: Store): Promise<number | undefined> {
  const row = await db
    .selectFrom('news_partition')
    .select([sql<string | null>`min(written_seq)`.as('seq'), sql<string>`count(*) filter (where written_seq is null)`.as('never')])
    .executeTakeFirstOrThrow();
  return Number(row.never) > 0 || row.seq === null ? undefined : Number(row.seq);
}

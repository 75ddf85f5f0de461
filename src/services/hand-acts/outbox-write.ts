import { sql } from 'kysely';
import type { Db } from '../../store/db.js';

/** The bucket an outbox row goes to (migrations/0007_record_outbox.ts). */
export type RecordBucket = 'handActs' | 'calls';

/** The transaction an act runs in, and the ids of the records it wrote to the outbox (put at once after the commit). */
export interface ActOutbox {
  tx: Db;
  ids: string[];
  /**
   * For a verb that commits its own act (verbs/verb.ts `commitsItsOwnAct`): writes its call's end,
   * OK with `answer`, in `tx`, the act's own transaction, just before it commits. Set by the dispatcher.
   */
  endCall?: (tx: Db, answer: unknown) => Promise<void>;
}

/**
 * Writes a record to the outbox in the act's transaction (or alone, committed at once, outside one):
 * whichever replica relays first puts it in its bucket under `id` (src/services/outbox/outbox.ts).
 */
export async function writeToOutbox(tx: Db, bucket: RecordBucket, id: string, body: string): Promise<void> {
  await sql`insert into record_outbox (bucket, id, body) values (${bucket}, ${id}, ${body})`.execute(tx);
}

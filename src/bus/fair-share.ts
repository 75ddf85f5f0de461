import type { JetStreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { KvView, ViewEntry } from './kv-view.js';

/**
 * Kept records are a fair share (docs/calls.md, "A fair share of what is kept"): a bucket that keeps
 * its last N records (calls: 1,000, hand-acts: 100,000) gives each caller at most a share of them.
 * Before a caller's new record is written, its own oldest go when it holds its share, and when the
 * bucket is full the oldest of whoever holds the most goes, never by the stream's oldest-first
 * discard: one caller, however fast, pushes out only its own records.
 */

/** What making room needs: the bucket, this replica's view of it, and what to ask of each record. */
export interface SharedBucket<T> {
  kv: KV;
  view: KvView<T>;
  /** The bucket's bound (the stream's max_msgs). */
  kept: number;
  /** A caller's share of it. */
  share: number;
  /** Who a record is of. */
  ownerOf: (value: T) => string;
  /** Whether a record may go (a RUNNING call may not: its end is still to be written). */
  mayGo: (value: T) => boolean;
}

/** The stream side of a KV bucket (the @nats-io/kv Bucket behind the KV interface): to purge a key's delete marker. */
interface BucketStream {
  jsm: JetStreamManager;
  stream: string;
  subjectForKey(key: string): string;
}

/**
 * Takes a record out of the bucket: deleted (every replica's view hears it), then its delete marker
 * purged from the stream, so the bucket's count of messages is its count of records again (a marker
 * left would count against max_msgs and push an older record of another caller out).
 */
async function takeOut<T>(bucket: SharedBucket<T>, entry: ViewEntry<T>): Promise<void> {
  await bucket.kv.delete(entry.key);
  bucket.view.remove(entry.key, Number.MAX_SAFE_INTEGER);
  const stream = bucket.kv as unknown as Partial<BucketStream>;
  if (stream.jsm && stream.stream && stream.subjectForKey) {
    await stream.jsm.streams.purge(stream.stream, { filter: stream.subjectForKey(entry.key) });
  }
}

/**
 * Makes room for one more record of `owner`: while it holds its share, its own oldest (by last
 * write, as the stream discards) go; when the bucket would then be full, the oldest record of the
 * caller holding the most goes. A record that may not go (a RUNNING call) stays: an owner whose
 * share is all running goes over it until they end. Answers how many records went.
 */
export async function makeRoomFor<T>(bucket: SharedBucket<T>, owner: string): Promise<number> {
  const entries = bucket.view.values();
  // Below its share and far from full: nothing to weigh (the common case, no scan of owners).
  if (entries.length < bucket.share && entries.length < bucket.kept - 1) return 0;
  const byOwner = new Map<string, ViewEntry<T>[]>();
  for (const entry of entries) {
    const who = bucket.ownerOf(entry.value);
    const list = byOwner.get(who);
    if (list) list.push(entry);
    else byOwner.set(who, [entry]);
  }
  const oldestFirst = (list: ViewEntry<T>[]) => list.filter((e) => bucket.mayGo(e.value)).sort((a, b) => a.revision - b.revision);
  const own = byOwner.get(owner) ?? [];
  const going: ViewEntry<T>[] = [];
  const ownMayGo = oldestFirst(own);
  while (own.length - going.length >= bucket.share) {
    const next = ownMayGo.shift();
    // All it holds are running: it goes over its share by its calls in flight (bounded by the
    // responder's in-flight limit), and the next write after they end makes it even again.
    if (!next) break;
    going.push(next);
  }
  if (entries.length - going.length >= bucket.kept - 1) {
    let largest: ViewEntry<T>[] = [];
    for (const [who, list] of byOwner) {
      const left = who === owner ? ownMayGo : oldestFirst(list);
      if (left.length > largest.length) largest = left;
    }
    if (largest[0]) going.push(largest[0]);
  }
  for (const entry of going) await takeOut(bucket, entry);
  return going.length;
}

/** Each view's writes in turn on this replica, so two at once do not both find room that is one. */
const turns = new WeakMap<object, Promise<unknown>>();

/**
 * Makes room for `owner`'s record and writes it, one write at a time on this replica (two calls
 * started at once would both see the same room and overshoot the share). Across replicas a share
 * can be overshot by the records written at the same instant, then evened out by the next write.
 */
export function withRoomFor<T, R>(bucket: SharedBucket<T>, owner: string, write: () => Promise<R>): Promise<R> {
  const before = turns.get(bucket.view) ?? Promise.resolve();
  const mine = before
    .catch(() => undefined)
    .then(async () => {
      await makeRoomFor(bucket, owner);
      return write();
    });
  turns.set(
    bucket.view,
    mine.catch(() => undefined),
  );
  return mine;
}

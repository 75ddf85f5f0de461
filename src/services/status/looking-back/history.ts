import { DeliverPolicy, type StoredMsg } from '@nats-io/jetstream';
import { Invalid, NotFound, Unavailable } from '../../../kernel/errors.js';
import type { Composition, StatusFeed } from '../composition.js';
import type { StatusDelta } from '../delta/delta.js';
import { replayDeltas } from '../delta/delta-chain.js';
import { statusAssembler } from '../replicating/assemble.js';
import { type StatusStreamLink, storedAsMessage } from '../replicating/stream-follower.js';
import { framingOf, type StreamEntry, type StreamMessage, snapshotStartOf } from '../replicating/wire.js';
import type { LookBackIndex } from './look-back-index.js';
import type { Placed } from './stream-directory.js';

/** Compositions rebuilt by `statusAt` kept by seq (least recently asked dropped first): a handful of incident screens. */
export const STATUS_AT_CACHE_MAX = 16;
/** ...holding at most this many machines in all (the one asked last always kept): at 1,000,000 machines a composition is about 300 MB. */
export const STATUS_AT_CACHE_MACHINES_MAX = 1_000_000;
/** A stream message missing (deleted) is stepped over up to this many times when searching. */
const HOLES_MAX = 32;

export type HistoryLink = Pick<StatusStreamLink, 'js' | 'jsm' | 'stream' | 'subjects'>;

/** What a look back is asked for: a composition by its seq, or the one in force at an instant. */
export type StatusAtQuery = { seq: number; at?: undefined } | { at: Date; seq?: undefined };

/**
 * Reads the status stream backwards in time. With a look-back index (`useIndex`), the composition
 * asked is found in memory (its seq, the instant it was in force, where its snapshot begins);
 * without one, or before what it holds, `locate` finds by binary search over the stream's sequence
 * (a few dozen direct reads) the last message at or before a seq or an instant. Either way, one of
 * the last minutes is rebuilt from the index's window in memory, an older one from the snapshot
 * before it and the deltas after.
 */
export class StatusHistory {
  private readonly cache = new Map<number, Composition>();
  /** The replica's look-back index (`startLookBackIndex`), once started. */
  index: LookBackIndex | undefined;

  constructor(
    readonly link: HistoryLink,
    private readonly feed: StatusFeed,
  ) {}

  /** Answers from `index` from now on. */
  useIndex(index: LookBackIndex): void {
    this.index = index;
  }

  private async read(seq: number): Promise<StoredMsg | null> {
    return this.link.jsm.streams.getMessage(this.link.stream, { seq }).catch((error: Error) => {
      if (/no message found|not found/i.test(error.message)) return null;
      throw error;
    });
  }

  /** The stream's first and last sequence, now. */
  async bounds(): Promise<{ first: number; last: number }> {
    const info = await this.link.jsm.streams.info(this.link.stream);
    return { first: info.state.first_seq, last: info.state.last_seq };
  }

  /** The last message whose composition seq (or stored instant) is at or before `query`; undefined when every one is after. */
  async locate(query: StatusAtQuery, bounds?: { first: number; last: number }): Promise<StoredMsg | undefined> {
    const { first, last } = bounds ?? (await this.bounds());
    const key = (m: StoredMsg) => (query.at ? m.time.getTime() : (framingOf({ seq: m.seq, headers: m.header })?.seq ?? Number.POSITIVE_INFINITY));
    const target = query.at ? query.at.getTime() : query.seq;
    let lo = first;
    let hi = last;
    let found: StoredMsg | undefined;
    while (lo <= hi) {
      const mid = Math.floor((lo + hi) / 2);
      let m: StoredMsg | null = null;
      for (let s = mid; s <= Math.min(hi, mid + HOLES_MAX) && !m; s++) m = await this.read(s);
      if (!m) {
        hi = mid - 1;
        continue;
      }
      if (key(m) <= target!) {
        found = m;
        lo = m.seq + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  /**
   * Each entry of the stream from sequence `from` to `to` (inclusive), in order, joined from its
   * parts; an ordered consumer reads them in batches.
   */
  async *entries(from: number, to: number, skip?: (msg: StreamMessage) => boolean): AsyncGenerator<StreamEntry> {
    if (to < from) return;
    const consumer = await this.link.js.consumers.get(this.link.stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from });
    const assemble = statusAssembler();
    let next = from;
    try {
      while (next <= to) {
        const batch = await consumer.fetch({ max_messages: Math.min(10_000, to - next + 1), expires: 5_000 });
        let got = 0;
        for await (const m of batch) {
          got++;
          next = m.seq + 1;
          const msg: StreamMessage = { seq: m.seq, data: m.data, headers: m.headers, time: m.time.getTime() };
          if (skip?.(msg)) continue;
          const entry = await assemble(msg).catch(() => undefined);
          if (entry) yield entry;
          if (m.seq >= to) break;
        }
        if (!got) break;
      }
    } finally {
      await consumer.delete().catch(() => undefined);
    }
  }

  /** The composition a stream message belongs to, rebuilt from the snapshot before it and the deltas between. */
  async rebuild(at: StoredMsg, first: number): Promise<Composition> {
    const start = snapshotStartOf({ seq: at.seq, headers: at.header });
    if (start === undefined || start < first)
      throw new NotFound('composition the status history still holds', framingOf(storedAsMessage(at))?.seq.toString() ?? '?');
    return this.replay(start, at.seq);
  }

  /**
   * The composition whose last message is at stream sequence `end`, from the snapshot beginning at
   * `start` and the deltas up to it; or, given `from` (a composition rebuilt before, its last message
   * at `start - 1`), from it and the deltas after it alone.
   */
  private async replay(start: number, end: number, from?: Composition): Promise<Composition> {
    let base: Composition | undefined = from;
    let chain: StatusDelta[] = [];
    const reached = () => chain.at(-1)?.seq ?? base?.seq ?? Number.NEGATIVE_INFINITY;
    for await (const entry of this.entries(start, end)) {
      if (entry.kind === 'snapshot') {
        if (entry.seq > reached()) {
          base = entry.composition;
          chain = [];
        }
      } else if (base && entry.seq > reached()) {
        if (entry.delta.baseSeq !== reached()) throw new Unavailable(`the status history misses the delta before composition ${entry.seq}`);
        chain.push(entry.delta);
      }
    }
    if (!base) throw new Unavailable('the status history holds no snapshot before that composition');
    // Replayed once at the end: a list is copied once, not once per delta.
    return Object.freeze(replayDeltas(base, chain));
  }

  /**
   * The composition asked, from the index: its seq (by `at`, the last composed at or before it) and
   * where it lies in the stream; then rebuilt from the window (in memory), else from a composition
   * rebuilt before, else from its snapshot. Undefined when the index cannot say (none, not yet read
   * that far, before what it holds while the backfill runs): the stream is searched instead.
   */
  private async fromIndex(query: StatusAtQuery, label: string): Promise<Composition | undefined> {
    const index = this.index;
    if (!index || (query.at && !(await index.covers(query.at.getTime())))) return undefined;
    const seq = query.at ? index.timeline.inForceAt(query.at.getTime())?.seq : query.seq;
    if (seq === undefined) throw new NotFound('composition the status history still holds', label);
    const kept = this.cache.get(seq);
    if (kept) return this.keep(kept);
    const place = index.directory.placeOf(seq);
    if (!place) {
      // A seq the stream's headers were read past without it is none of the stream's compositions.
      const read = index.directory.span();
      if (query.seq !== undefined && read && seq < read.first) throw new NotFound('composition the status history still holds', label);
      if (query.seq !== undefined && read && seq < read.last) throw new NotFound('composition', label);
      return undefined;
    }
    const { first } = await this.bounds();
    if (place.snapshot < first) throw new NotFound('composition the status history still holds', label);
    // Heard in the last minutes: rebuilt in memory from the window's checkpoint before it, no stream read, no parse.
    const recent = index.recent?.composition(seq);
    if (recent) return recent;
    const checkpoint = this.checkpointFor(index, place);
    if (checkpoint) {
      const rebuilt = await this.replay(checkpoint.end + 1, place.end, checkpoint.composition).catch(() => undefined);
      if (rebuilt?.seq === seq) return this.keep(rebuilt);
    }
    return this.keep(await this.replay(place.snapshot, place.end));
  }

  /**
   * The latest composition kept (STATUS_AT_CACHE_MAX) before `place` and after the same snapshot:
   * a checkpoint, from which only the deltas between are read and applied (the snapshot is not).
   */
  private checkpointFor(index: LookBackIndex, place: Placed): { composition: Composition; end: number } | undefined {
    let best: { composition: Composition; end: number } | undefined;
    for (const composition of this.cache.values()) {
      if (composition.seq >= place.seq || (best && composition.seq <= best.composition.seq)) continue;
      const kept = index.directory.placeOf(composition.seq);
      if (kept && kept.snapshot === place.snapshot && kept.end < place.end) best = { composition, end: kept.end };
    }
    return best;
  }

  private keep(composition: Composition): Composition {
    this.cache.delete(composition.seq);
    this.cache.set(composition.seq, composition);
    let machines = 0;
    for (const kept of this.cache.values()) machines += kept.machines.length;
    while (this.cache.size > 1 && (this.cache.size > STATUS_AT_CACHE_MAX || machines > STATUS_AT_CACHE_MACHINES_MAX)) {
      const oldest = this.cache.keys().next().value!;
      machines -= this.cache.get(oldest)!.machines.length;
      this.cache.delete(oldest);
    }
    return composition;
  }

  /**
   * The composition `seq`, or the one in force at instant `at`, while the stream still holds it:
   * the nearest snapshot at or before it and the deltas after, kept by seq (STATUS_AT_CACHE_MAX).
   */
  async statusAt(query: { seq?: number | null; at?: Date | null }): Promise<Composition> {
    const bySeq = query.seq !== null && query.seq !== undefined;
    const byAt = query.at !== null && query.at !== undefined;
    if (bySeq === byAt) throw new Invalid('statusAt takes exactly one of seq and at', bySeq ? 'at' : 'seq');
    const current = this.feed.current();
    if (bySeq) {
      const seq = query.seq!;
      if (current && seq === current.seq) return current;
      if (current && seq > current.seq) throw new NotFound('composition yet', `seq ${seq}`);
      const kept = this.cache.get(seq);
      if (kept) return this.keep(kept);
    } else if (current && query.at!.getTime() >= Date.parse(current.composedAt)) return current;
    const where: StatusAtQuery = bySeq ? { seq: query.seq! } : { at: query.at! };
    const label = bySeq ? `seq ${query.seq}` : `at ${query.at!.toISOString()}`;
    const indexed = await this.fromIndex(where, label);
    if (indexed) return indexed;
    const bounds = await this.bounds();
    const found = await this.locate(where, bounds);
    if (!found) throw new NotFound('composition the status history still holds', label);
    const foundSeq = framingOf({ seq: found.seq, headers: found.header })?.seq;
    if (bySeq && foundSeq !== query.seq) throw new NotFound('composition', label);
    const kept = foundSeq !== undefined ? this.cache.get(foundSeq) : undefined;
    if (kept) return this.keep(kept);
    // One the stream holds whole (its snapshot too) that the window holds: its headers not yet read into the directory.
    const start = snapshotStartOf({ seq: found.seq, headers: found.header });
    const recent = foundSeq !== undefined && start !== undefined && start >= bounds.first ? this.index?.recent?.composition(foundSeq) : undefined;
    if (recent) return recent;
    return this.keep(await this.rebuild(found, bounds.first));
  }
}

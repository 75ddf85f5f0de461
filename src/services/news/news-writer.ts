import type { JsMsg } from '@nats-io/jetstream';
import { inBatchSpan } from '../../bus/trace-context.js';
import { isStoreUnavailable } from '../../kernel/errors.js';
import { STORE_WAIT_FIRST_MS, STORE_WAIT_MAX_MS } from '../../store/db.js';
import { type IngestMesh, ingestBatch, type Judged } from './batch.js';
import { NEWS_BATCH_MAX, NEWS_BATCH_MS, NEWS_HELD_MIN, NEWS_HELD_MS, NEWS_PENDING_MAX } from './limits.js';
import { writtenRate } from './written-rate.js';

export interface NewsStats {
  /** Messages of this replica's partitions read from the stream, each once: one read again (after the store was away) is counted in `redelivered`, not again here. */
  received: number;
  /** Written to the store. */
  ingested: number;
  /** Refused by the wire contract (logged, dropped). */
  malformed: number;
  /** Valid by the wire contract yet refused by the store alone: found by splitting its batch, logged, dropped. */
  poison: number;
  /** Dropped unwritten because the store was unavailable, and read from the stream again later. */
  redelivered: number;
  batches: number;
}

/** One message read and judged, held until its batch is written. */
export interface Held {
  news: Judged;
  msg: Pick<JsMsg, 'seq' | 'subject' | 'headers' | 'data'>;
  partition: number;
}

/** What the writer tells the ingest: where a batch is cut, that it is written, that the store is away. */
export interface WriterHooks<Cut> {
  /** Called as a batch is taken from what is held, before it is written; `rest` is what stays held. */
  cut(rest: readonly Held[]): Cut;
  /** The batch cut with `cut` is written (a message the store refused alone is dropped). */
  written(cut: Cut): void;
  /** The store was unavailable: the batch was not written, and everything held is dropped; returns nothing. */
  storeAway(dropped: number): void;
  /** Called after each batch: the reader may wait for room. */
  afterBatch(): void;
  /** Awaited before a batch is written: may find partitions taken by another replica (this one was thought gone). */
  fence(): Promise<void>;
  /** Whether this replica still writes `partition` (checked after the fence). */
  owns(partition: number): boolean;
}

/** A batch written (true), or not because the store was unavailable. */
type Written = true | { away: unknown };

/**
 * Writes the news of this replica's partitions, in batches: collected for NEWS_BATCH_MS, one batch
 * written at a time. A batch the store cannot take because it is unavailable is dropped with all
 * that is held (the stream keeps it: the ingest reads it again from what is written) and writing
 * pauses, doubling from STORE_WAIT_FIRST_MS to STORE_WAIT_MAX_MS; a batch it refuses is split in
 * halves until the message it refuses is found.
 */
export class NewsWriter<Cut> {
  private pending: Held[] = [];
  /** The batch being written. */
  private inWrite: Held[] = [];
  private readonly rate = writtenRate();
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private idle: (() => void)[] = [];
  private resumeAt = 0;
  private backoff = STORE_WAIT_FIRST_MS;

  constructor(
    private readonly mesh: IngestMesh,
    private readonly stats: NewsStats,
    private readonly hooks: WriterHooks<Cut>,
  ) {}

  add(held: Held): void {
    this.pending.push(held);
    this.schedule();
  }

  /** How many more messages this replica may hold: about NEWS_HELD_MS of what it writes, less what it holds. */
  room(): number {
    const heldMax = Math.min(NEWS_PENDING_MAX, Math.max(NEWS_HELD_MIN, Math.ceil(this.rate.perMs() * NEWS_HELD_MS)));
    return heldMax - this.pending.length - this.inWrite.length;
  }

  /** How long writing still pauses after the store was unavailable, in ms (0 or less: not paused). */
  pausedFor(): number {
    return this.resumeAt - Date.now();
  }

  /** Whether nothing is held or being written. */
  isIdle(): boolean {
    return !this.writing && this.pending.length === 0;
  }

  /** Drops what is held of `partitions` (given up: their next owner reads them from what is written); returns how many. */
  dropPartitions(partitions: ReadonlySet<number>): number {
    const before = this.pending.length;
    this.pending = this.pending.filter((h) => !partitions.has(h.partition));
    return before - this.pending.length;
  }

  /** Resolves once the batch being written, if any, is done (written or dropped). */
  async betweenBatches(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** Resolves once everything added so far is written (or dropped). */
  flush(): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.isIdle()) return resolve();
      this.idle.push(resolve);
      if (this.timer) {
        clearTimeout(this.timer);
        this.write();
      } else this.schedule();
    });
  }

  /** Writes what is held at once, without waiting out a pause (a stop). */
  async stop(): Promise<void> {
    this.resumeAt = 0;
    await this.flush();
    if (this.timer) clearTimeout(this.timer);
    this.idle = [];
  }

  private schedule(): void {
    if (this.timer || this.writing || this.pending.length === 0) return;
    const wait = Math.max(this.resumeAt - Date.now(), this.pending.length >= NEWS_BATCH_MAX ? 0 : NEWS_BATCH_MS);
    this.timer = setTimeout(() => this.write(), wait);
  }

  /** The store is unavailable: writing pauses, and the batch and all that is held are dropped (the stream keeps them). */
  private storeAway(batch: Held[], err: unknown): void {
    const now = Date.now();
    if (this.resumeAt <= now) {
      this.resumeAt = now + this.backoff;
      this.mesh.logger.warn(
        { err: String(err), messages: batch.length + this.pending.length, retryInMs: this.backoff },
        'the store is unavailable: news is kept in the stream and read again',
      );
      this.backoff = Math.min(this.backoff * 2, STORE_WAIT_MAX_MS);
    }
    const dropped = batch.length + this.pending.length;
    this.pending = [];
    this.stats.redelivered += dropped;
    this.hooks.storeAway(dropped);
  }

  /** Writes a batch; one the store refuses is split in halves until the messages it refuses are found. Returns `away` when the store is unavailable. */
  private async writeSplitting(batch: Held[]): Promise<Written> {
    try {
      await ingestBatch(
        this.mesh,
        batch.map((h) => h.news),
      );
    } catch (err) {
      if (isStoreUnavailable(err)) return { away: err };
      if (batch.length === 1) {
        this.dropPoison(batch[0]!, err);
        return true;
      }
      const half = Math.ceil(batch.length / 2);
      const first = await this.writeSplitting(batch.slice(0, half));
      if (first !== true) return first;
      return this.writeSplitting(batch.slice(half));
    }
    this.stats.ingested += batch.length;
    this.rate.add(batch.length);
    this.backoff = STORE_WAIT_FIRST_MS;
    return true;
  }

  private dropPoison({ msg }: Held, err: unknown): void {
    this.stats.poison++;
    this.mesh.logger.warn({ err: String(err), subject: msg.subject, bytes: msg.data.length }, 'news the store refuses was dropped');
  }

  private write(): void {
    this.timer = undefined;
    const batch = this.pending.splice(0, NEWS_BATCH_MAX);
    if (batch.length === 0) {
      for (const resolve of this.idle.splice(0)) resolve();
      return;
    }
    this.stats.batches++;
    this.inWrite = batch;
    const cut = this.hooks.cut(this.pending);
    this.writing = inBatchSpan(
      'news batch',
      batch.map((h) => h.msg),
      async () => {
        if (Date.now() < this.resumeAt) return this.storeAway(batch, 'paused');
        try {
          await this.hooks.fence();
        } catch (err) {
          return this.storeAway(batch, err);
        }
        const done = await this.writeSplitting(batch.filter((h) => this.hooks.owns(h.partition)));
        if (done === true) this.hooks.written(cut);
        else this.storeAway(batch, done.away);
      },
    )
      .catch((err) => this.mesh.logger.error({ err, messages: batch.length }, 'writing a batch of news failed'))
      .finally(() => {
        this.writing = undefined;
        this.inWrite = [];
        this.hooks.afterBatch();
        if (this.pending.length) this.schedule();
        else for (const resolve of this.idle.splice(0)) resolve();
      });
  }
}

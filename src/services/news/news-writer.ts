import type { JsMsg } from '@nats-io/jetstream';
import { inBatchSpan } from '../../bus/trace-context.js';
import { isStoreUnavailable } from '../../kernel/errors.js';
import { STORE_WAIT_FIRST_MS, STORE_WAIT_MAX_MS } from '../../store/db.js';
import { type IngestMesh, ingestBatch, type Judged } from './batch.js';
import { NEWS_BATCH_MAX, NEWS_BATCH_MS, NEWS_HELD_MIN, NEWS_HELD_MS, NEWS_PENDING_MAX } from './limits.js';
import { writtenRate } from './written-rate.js';

/** Handed-back messages remembered so that a batch retried is counted received once: a few store outages' worth of what one replica holds. */
const HANDED_BACK_KEPT = 100_000;

export interface NewsStats {
  /** Messages delivered to this replica, each once: one it handed back and was delivered again is counted in `redelivered`, not again here. */
  received: number;
  /** Written to the store (and acknowledged). */
  ingested: number;
  /** Refused by the wire contract (acknowledged, so never delivered again). */
  malformed: number;
  /** Valid by the wire contract yet refused by the store alone: found by splitting its batch, logged, dropped. */
  poison: number;
  /** Handed back to the stream unwritten because the store was unavailable: delivered again later. */
  redelivered: number;
  batches: number;
}

/** One message pulled and judged, held until its batch is written. */
export interface Held {
  news: Judged;
  msg: JsMsg;
  /** When it was pulled, or last told to the stream as being worked on (Date.now()). */
  touchedAt: number;
}

/**
 * Writes the news a replica pulled, in batches: collected for NEWS_BATCH_MS, one batch written at a
 * time, each message acknowledged only once its batch is written. A batch the store cannot take
 * because it is unavailable is handed back (nak with a delay, doubling from STORE_WAIT_FIRST_MS to
 * STORE_WAIT_MAX_MS) and writing pauses as long; a batch it refuses is split in halves until the
 * message it refuses is found.
 */
export class NewsWriter {
  /** The stream sequences this replica handed back, so their next delivery is not counted received again (at most HANDED_BACK_KEPT, oldest out). */
  private readonly handedBack = new Set<number>();
  private readonly pending: Held[] = [];
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
    /** Called after each batch: the puller may wait for room. */
    private readonly onWritten: () => void,
  ) {}

  /** Whether a delivery is one this replica handed back (then it is not received anew). */
  takeHandedBack(seq: number): boolean {
    return this.handedBack.delete(seq);
  }

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

  /** Tells the stream that what was held since before `due` (Date.now()) is being worked on. */
  stillWorking(due: number): void {
    for (const list of [this.inWrite, this.pending]) {
      for (const held of list) {
        if (held.touchedAt > due) continue;
        held.touchedAt = Date.now();
        held.msg.working();
      }
    }
  }

  /** Resolves once everything added so far is written (or handed back). */
  flush(): Promise<void> {
    return new Promise<void>((resolve) => {
      if (!this.writing && this.pending.length === 0) return resolve();
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

  /** The store is unavailable: the batch goes back to the stream, to come again once the pause is over. */
  private handBack(batch: Held[], err: unknown): void {
    const now = Date.now();
    if (this.resumeAt <= now) {
      this.resumeAt = now + this.backoff;
      this.mesh.logger.warn(
        { err: String(err), messages: batch.length, retryInMs: this.backoff },
        'the store is unavailable: news is kept in the stream and tried again',
      );
      this.backoff = Math.min(this.backoff * 2, STORE_WAIT_MAX_MS);
    }
    const delay = Math.max(this.resumeAt - now, 1);
    for (const held of batch) {
      held.msg.nak(delay);
      this.handedBack.add(held.msg.seq);
    }
    for (const seq of this.handedBack) {
      if (this.handedBack.size <= HANDED_BACK_KEPT) break;
      this.handedBack.delete(seq);
    }
    this.stats.redelivered += batch.length;
  }

  /** Writes a batch; one the store refuses is split in halves until the messages it refuses are found. */
  private async writeSplitting(batch: Held[]): Promise<void> {
    if (Date.now() < this.resumeAt) return this.handBack(batch, 'paused');
    try {
      await ingestBatch(
        this.mesh,
        batch.map((h) => h.news),
      );
    } catch (err) {
      if (isStoreUnavailable(err)) return this.handBack(batch, err);
      if (batch.length === 1) return this.dropPoison(batch[0]!, err);
      const half = Math.ceil(batch.length / 2);
      await this.writeSplitting(batch.slice(0, half));
      await this.writeSplitting(batch.slice(half));
      return;
    }
    for (const held of batch) held.msg.ack();
    this.stats.ingested += batch.length;
    this.rate.add(batch.length);
    this.backoff = STORE_WAIT_FIRST_MS;
  }

  private dropPoison({ msg }: Held, err: unknown): void {
    this.stats.poison++;
    msg.term();
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
    this.writing = inBatchSpan(
      'news batch',
      batch.map((h) => h.msg),
      () => this.writeSplitting(batch),
    )
      .catch((err) => this.mesh.logger.error({ err, messages: batch.length }, 'writing a batch of news failed'))
      .finally(() => {
        this.writing = undefined;
        this.inWrite = [];
        this.onWritten();
        if (this.pending.length) this.schedule();
        else for (const resolve of this.idle.splice(0)) resolve();
      });
  }
}

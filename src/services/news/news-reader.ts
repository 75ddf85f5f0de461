import { type Consumer, DeliverPolicy, type JetStreamClient, type JsMsg } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { NEWS_FETCH_MAX, NEWS_PULL_RETRY_MS } from './limits.js';

/** A read waits this long for messages before the next is asked. */
const NEWS_READ_EXPIRES_MS = 2_000;

/** What the reader asks of the writer before each read: whether it pauses, and how much it may still hold. */
interface Holder {
  pausedFor(): number;
  room(): number;
}

/**
 * Reads the news stream from a sequence for the ingest, while the writer has room: when the
 * ingest is behind the hearing's follower (it took a partition written up to an earlier message,
 * the store was away, it could not hold what the follower read). An ordered consumer of its own,
 * at most NEWS_FETCH_MAX messages a read and never more than the writer's room; it naps while the
 * writer pauses or is full (woken as soon as a batch is written), and ends once `onMessage` says
 * it caught up (the follower's messages take over) or `caughtUp` says so before a read.
 */
export class NewsReader {
  private stopped = false;
  private fetching: { stop(): void } | undefined;
  private readonly naps = new Set<() => void>();
  /** The next sequence to read. */
  private next: number;
  readonly done: Promise<void>;

  constructor(
    private readonly source: { js: Pick<JetStreamClient, 'consumers'>; stream: string; logger: Logger },
    from: number,
    private readonly holder: Holder,
    /** Returns true once the ingest caught up with the follower: the reader ends. */
    private readonly onMessage: (msg: JsMsg) => boolean,
    private readonly caughtUp: () => boolean,
  ) {
    this.next = Math.max(1, from);
    // Begun on the next tick: the ingest names this reader its current one first.
    this.done = Promise.resolve().then(() => this.read());
  }

  /** Ends a nap now: room was made. */
  wake(): void {
    for (const resolve of this.naps) resolve();
    this.naps.clear();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.fetching?.stop();
    this.wake();
    await this.done;
  }

  private nap(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const t = setTimeout(() => (this.naps.delete(done), resolve()), ms);
      const done = () => (clearTimeout(t), resolve());
      this.naps.add(done);
    });
  }

  private async read(): Promise<void> {
    let consumer: Consumer | undefined;
    try {
      while (!this.stopped && !this.caughtUp()) {
        const paused = this.holder.pausedFor();
        if (paused > 0) {
          await this.nap(paused);
          continue;
        }
        const room = this.holder.room();
        if (room <= 0) {
          await this.nap(NEWS_PULL_RETRY_MS); // woken as soon as a batch is written
          continue;
        }
        try {
          consumer ??= await this.source.js.consumers.get(this.source.stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: this.next });
          const fetching = await consumer.fetch({ max_messages: Math.min(NEWS_FETCH_MAX, room), expires: NEWS_READ_EXPIRES_MS });
          this.fetching = fetching;
          if (this.stopped) fetching.stop();
          for await (const msg of fetching) {
            if (this.stopped) break;
            this.next = msg.seq + 1;
            if (this.onMessage(msg)) {
              this.stopped = true;
              fetching.stop();
            }
          }
        } catch (err) {
          if (this.stopped) return;
          this.source.logger.warn({ err: String(err), from: this.next, retryInMs: NEWS_PULL_RETRY_MS }, 'reading the news stream failed: trying again');
          await consumer?.delete().catch(() => undefined);
          consumer = undefined;
          await this.nap(NEWS_PULL_RETRY_MS);
        } finally {
          this.fetching = undefined;
        }
      }
    } finally {
      // Done with it: not left on the server holding the rest of the stream as pending.
      await consumer?.delete().catch(() => undefined);
    }
  }
}

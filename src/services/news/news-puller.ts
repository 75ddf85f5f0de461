import type { Consumer, ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { NEWS_FETCH_MAX, NEWS_PULL_RETRY_MS } from './limits.js';

/**
 * A pull waits this long for messages before the next is asked. Its idle heartbeat is half of it:
 * long enough that a process busy writing a large batch does not miss one and drop the pull.
 */
const NEWS_FETCH_EXPIRES_MS = 10_000;

/** What the puller asks of the writer before each pull: whether it pauses, and how much it may still hold. */
interface Holder {
  pausedFor(): number;
  room(): number;
}

/**
 * Pulls from the news stream's shared consumer while this replica has room: at most NEWS_FETCH_MAX
 * messages a pull and never more than the holder's room; it naps while the holder pauses or is
 * full (woken as soon as a batch is written), and after a failed pull tries again NEWS_PULL_RETRY_MS later.
 */
export class NewsPuller {
  private stopped = false;
  private fetching: ConsumerMessages | undefined;
  private readonly naps = new Set<() => void>();
  private readonly pulling: Promise<void>;

  constructor(
    private readonly consumer: Pick<Consumer, 'fetch'>,
    private readonly holder: Holder,
    private readonly onMessage: (msg: JsMsg) => void,
    private readonly logger: Logger,
  ) {
    this.pulling = this.pull();
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
    await this.pulling;
  }

  private nap(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const t = setTimeout(() => (this.naps.delete(done), resolve()), ms);
      const done = () => (clearTimeout(t), resolve());
      this.naps.add(done);
    });
  }

  private async pull(): Promise<void> {
    while (!this.stopped) {
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
      await this.fetchOnce(room);
    }
  }

  private async fetchOnce(room: number): Promise<void> {
    try {
      this.fetching = await this.consumer.fetch({ max_messages: Math.min(NEWS_FETCH_MAX, room), expires: NEWS_FETCH_EXPIRES_MS });
      if (this.stopped) this.fetching.stop();
      for await (const msg of this.fetching) this.onMessage(msg);
    } catch (err) {
      if (this.stopped) return;
      this.logger.warn({ err: String(err), retryInMs: NEWS_PULL_RETRY_MS }, 'pulling news failed: trying again');
      await this.nap(NEWS_PULL_RETRY_MS);
    } finally {
      this.fetching = undefined;
    }
  }
}

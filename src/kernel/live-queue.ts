/**
 * What one live subscriber may have waiting, unsent: past it, the subscriber is dropped (told where
 * to resume) rather than the replica's memory growing with a reader that does not keep up.
 */
export const LIVE_WAITING_MAX = 1000;

/** A step of a live follow: the next item, or the end of a subscriber that fell too far behind. */
export type LiveStep<T> = { kind: 'item'; item: T } | { kind: 'dropped' };

/**
 * One subscriber's follow: first the `backlog` (what was kept since its cursor, oldest first, read
 * lazily so a long one costs no extra memory), then what `push` hands it live. Live items wait in a
 * queue of at most `max`; one more and the queue is emptied and the follow yields `dropped`, then
 * ends. `onEnd` runs once, when it ends for any reason (stop hearing the source there).
 */
export class LiveQueue<T> implements AsyncIterableIterator<LiveStep<T>> {
  private waiting: T[] = [];
  private state: 'open' | 'dropped' | 'ended' = 'open';
  private wake: (() => void) | undefined;
  private ended = false;

  constructor(
    private backlog: AsyncIterator<T> | Iterator<T> | undefined,
    private readonly onEnd: () => void,
    private readonly max: number = LIVE_WAITING_MAX,
  ) {}

  /** Hands an item to the subscriber; over `max` waiting, drops it instead. */
  push(item: T): void {
    if (this.state !== 'open') return;
    if (this.waiting.length >= this.max) {
      this.state = 'dropped';
      this.waiting = [];
      this.end();
    } else this.waiting.push(item);
    this.poke();
  }

  /** How many items wait unsent. */
  get size(): number {
    return this.waiting.length;
  }

  async next(): Promise<IteratorResult<LiveStep<T>>> {
    if (this.backlog && this.state === 'open') {
      const step = await this.backlog.next();
      if (!step.done) return { value: { kind: 'item', item: step.value }, done: false };
      this.backlog = undefined;
    }
    for (;;) {
      if (this.state === 'dropped') {
        this.state = 'ended';
        return { value: { kind: 'dropped' }, done: false };
      }
      if (this.state === 'ended') return { value: undefined, done: true };
      const item = this.waiting.shift();
      if (item !== undefined) return { value: { kind: 'item', item }, done: false };
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  return(): Promise<IteratorResult<LiveStep<T>>> {
    this.state = 'ended';
    this.waiting = [];
    this.end();
    this.poke();
    return Promise.resolve({ value: undefined, done: true });
  }

  throw(error?: unknown): Promise<IteratorResult<LiveStep<T>>> {
    void this.return();
    return Promise.reject(error);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private poke(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd();
  }
}

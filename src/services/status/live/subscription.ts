import { Invalid } from '../../../kernel/errors.js';
import type { Composition, StatusFeed } from '../composition.js';
import { diffCompositions, type StatusDelta } from '../delta/delta.js';
import { mergeDeltas } from '../delta/delta-chain.js';

/*
 * One live status subscription's rule, whoever serves it: the graphql-ws fan-out
 * (src/fanout/engine.ts, one pace per group of alike subscribers) and the iterator of SSE and of
 * sockets the fan-out does not serve (`followLive`). Where it starts (`after`: the deltas since,
 * merged into one), how often it sends (`everyMs`: at most one message per interval, the latest),
 * what each message is (the composition whole, or the delta from the one last sent) and its seq,
 * the event id a subscriber resumes from.
 */

/** `everyMs` above this (an hour) is refused: a dashboard that rare wants `status` as a query. */
export const EVERY_MS_MAX = 3_600_000;

/** A feed whose listeners also get the delta that brought the replica to each composition, when one did. */
export interface StatusChangeFeed extends StatusFeed {
  subscribe(listener: (composition: Composition, delta?: StatusDelta) => void): () => void;
  /** The deltas from composition `seq` to the one held, in order ([] when `seq` is held); undefined when not kept (RESUME_DELTAS_MAX). */
  changesAfter?(seq: number): StatusDelta[] | undefined;
}

/** Whether an `everyMs` (a value as given, of any type) is absent or within 0 to EVERY_MS_MAX: the one check of its range. */
export function everyMsAllowed(everyMs: unknown): boolean {
  return everyMs === undefined || everyMs === null || (typeof everyMs === 'number' && everyMs >= 0 && everyMs <= EVERY_MS_MAX);
}

/** `everyMs` as given: absent or 0 means every composition; negative or over EVERY_MS_MAX is refused. */
export function judgeEveryMs(everyMs: number | null | undefined): number {
  if (!everyMsAllowed(everyMs)) throw new Invalid(`everyMs must be between 0 and ${EVERY_MS_MAX}, got ${everyMs}`, 'everyMs');
  return everyMs ?? 0;
}

/**
 * Where a subscriber resuming from composition `after` starts, when the feed still keeps the deltas
 * since: those deltas merged into one (`catchUp`, absent when `after` is the newest) and the seq it
 * then holds. Undefined when they are not kept: it starts from the latest, whole.
 */
export function catchUpFrom(feed: StatusChangeFeed, after: number): { catchUp: StatusDelta | undefined; held: number } | undefined {
  const since = feed.changesAfter?.(after);
  const newest = feed.current();
  if (!since || (since.length && since[since.length - 1].seq !== newest?.seq)) return undefined;
  if (!since.length) return { catchUp: undefined, held: after };
  return { catchUp: since.length === 1 ? since[0] : mergeDeltas(since, newest!), held: since[since.length - 1].seq };
}

/** A message of a live subscription: the composition and, for a subscription of changes, the delta to it from the one last sent (absent: send it whole). */
export interface LiveMessage {
  composition: Composition;
  delta: StatusDelta | undefined;
}

/**
 * The rate and merging of one live subscription: compositions are offered as they come; `due` is
 * called when one may go out, and `take` hands it out. At most one per `everyMs` (none: every one),
 * the latest (at most one is held, however slow the taker), with, when `changes`, the delta from
 * the last one taken: the feed's own when it chains from there, else diffed, so the skipped ones
 * are merged in.
 */
export class LivePace {
  private held: { composition: Composition; delta: StatusDelta | undefined } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private takenAt = 0;

  constructor(
    private readonly everyMs: number,
    private readonly changes: boolean,
    private readonly due: () => void,
    /** The composition the subscriber holds already (a resumed one), the base of the next delta. */
    private last?: Composition,
  ) {}

  offer(composition: Composition, delta: StatusDelta | undefined): void {
    const base = this.held ? this.held.composition : this.last;
    this.held = { composition, delta: delta && base && delta.baseSeq === base.seq && !this.held ? delta : undefined };
    this.schedule();
  }

  /** The message that may go out now, when one is held and its interval has passed. */
  take(): LiveMessage | undefined {
    if (!this.held || this.timer) return undefined;
    if (this.wait() > 0) {
      // Asked early (a taker that came back before the interval ended): `due` is called when it ends.
      this.schedule();
      return undefined;
    }
    const { composition, delta } = this.held;
    this.held = undefined;
    const base = this.last;
    this.last = composition;
    this.takenAt = Date.now();
    return { composition, delta: !this.changes ? undefined : (delta ?? (base ? diffCompositions(base, composition) : undefined)) };
  }

  /**
   * Calls `due` once the held composition may go out: at once, or when the interval ends. The wait
   * is measured again when the timer fires: a timer may fire a millisecond before Date.now() says
   * the interval ended, and the held one must not then wait for the next composition to go out.
   */
  private schedule(): void {
    if (!this.held || this.timer) return;
    const wait = this.wait();
    if (wait <= 0) {
      this.due();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.schedule();
    }, wait);
    this.timer.unref();
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.held = undefined;
  }

  private wait(): number {
    return this.everyMs > 0 && this.last ? this.takenAt + this.everyMs - Date.now() : 0;
  }
}

/** What `followLive` hands out: a composition, or (when resuming, for changes) the deltas since `after` merged, with no composition. */
export type LiveStep = LiveMessage | { composition: undefined; delta: StatusDelta };

/** The seq of a live message: the event id (SSE `id:`) a subscriber sends back to resume from. */
export const liveSeq = (step: LiveStep): number => step.delta?.seq ?? step.composition!.seq;

/**
 * A live subscription as an iterator (SSE, and a socket the fan-out does not serve): a resumed one
 * (`after`, for changes) first gets `catchUpFrom`'s delta, else the current composition (unless
 * `fromCurrent` is false); then each newer one, paced by `LivePace`. A slow reader skips to the
 * latest, so it never holds more than one composition however far behind it falls. `return()`
 * ends it at once, even while it waits.
 */
export function followLive(
  feed: StatusChangeFeed,
  options: { everyMs?: number; changes?: boolean; after?: number; fromCurrent?: boolean } = {},
): AsyncIterableIterator<LiveStep> {
  const resumed = options.after !== undefined && options.changes ? catchUpFrom(feed, options.after) : undefined;
  const backlog: LiveStep[] = resumed?.catchUp ? [{ composition: undefined, delta: resumed.catchUp }] : [];
  let wake: ((result: IteratorResult<LiveStep>) => void) | undefined;
  let done = false;
  const pace = new LivePace(
    Math.max(0, options.everyMs ?? 0),
    options.changes ?? false,
    () => {
      if (!wake) return;
      const message = pace.take();
      if (!message) return;
      const resolve = wake;
      wake = undefined;
      resolve({ value: message, done: false });
    },
    resumed ? feed.current() : undefined,
  );
  const current = feed.current();
  if (!resumed && options.fromCurrent !== false && current) pace.offer(current, undefined);
  const unsubscribe = feed.subscribe((composition, delta) => {
    if (!done) pace.offer(composition, delta);
  });
  const finish = (): IteratorResult<LiveStep> => {
    done = true;
    unsubscribe();
    pace.close();
    backlog.length = 0;
    const resolve = wake;
    wake = undefined;
    resolve?.({ value: undefined, done: true });
    return { value: undefined, done: true };
  };
  return {
    next() {
      if (done) return Promise.resolve({ value: undefined, done: true });
      const queued = backlog.shift();
      if (queued) return Promise.resolve({ value: queued, done: false });
      const message = pace.take();
      if (message) return Promise.resolve({ value: message, done: false });
      return new Promise((resolve) => (wake = resolve));
    },
    return: () => Promise.resolve(finish()),
    throw: (error?: unknown) => {
      finish();
      return Promise.reject(error);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

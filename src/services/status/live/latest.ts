import { Unavailable } from '../../../kernel/errors.js';
import type { Composition, StatusFeed } from '../composition.js';

/**
 * The compositions a subscriber gets: the current one first (when there is one and `fromCurrent`
 * is not false), then each newer one. A slow reader skips to the latest: at most one composition
 * waits per subscriber, so a subscriber never holds more than that in memory however far behind it
 * falls. With `everyMs`, at most one is handed out per interval, the latest. `return()` ends it at
 * once, even while it waits.
 */
export function followLatest(feed: StatusFeed, options: { everyMs?: number; fromCurrent?: boolean } = {}): AsyncIterableIterator<Composition> {
  const everyMs = Math.max(0, options.everyMs ?? 0);
  let waiting: Composition | undefined = options.fromCurrent === false ? undefined : feed.current();
  let wake: ((result: IteratorResult<Composition>) => void) | undefined;
  let done = false;
  let handedAt = 0;
  const unsubscribe = feed.subscribe((composition) => {
    if (done) return;
    if (wake) {
      const resolve = wake;
      wake = undefined;
      handedAt = Date.now();
      resolve({ value: composition, done: false });
    } else waiting = composition;
  });
  const finish = (): IteratorResult<Composition> => {
    done = true;
    waiting = undefined;
    unsubscribe();
    const resolve = wake;
    wake = undefined;
    resolve?.({ value: undefined, done: true });
    return { value: undefined, done: true };
  };
  const iterator: AsyncIterableIterator<Composition> = {
    next() {
      if (done) return Promise.resolve({ value: undefined, done: true });
      const rest = handedAt + everyMs - Date.now();
      if (everyMs && rest > 0) return new Promise((resolve) => setTimeout(resolve, rest)).then(() => iterator.next());
      if (waiting) {
        const value = waiting;
        waiting = undefined;
        handedAt = Date.now();
        return Promise.resolve({ value, done: false });
      }
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
  return iterator;
}

/** The current composition, or the first one heard within `timeoutMs`; undefined if none comes. */
export function firstComposition(feed: StatusFeed, timeoutMs: number): Promise<Composition | undefined> {
  const now = feed.current();
  if (now) return Promise.resolve(now);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      unsubscribe();
      resolve(undefined);
    }, timeoutMs);
    const unsubscribe = feed.subscribe((composition) => {
      clearTimeout(timer);
      unsubscribe();
      resolve(composition);
    });
  });
}

/** A replica just started may not have heard a composition yet: wait this long for the first, never compose. */
export const STATUS_FIRST_WAIT_MS = 3_000;

/**
 * The `status` reading, whichever door asks: the last composition this replica heard, at once, or
 * the first one within STATUS_FIRST_WAIT_MS of a start; Unavailable when none comes. A status is
 * never composed while its caller waits.
 */
export async function currentStatus(feed: StatusFeed): Promise<Composition> {
  const composition = await firstComposition(feed, STATUS_FIRST_WAIT_MS);
  if (!composition) throw new Unavailable('no status composed yet: the serving replica composes one within seconds of starting');
  return composition;
}

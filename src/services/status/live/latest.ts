import { Unavailable } from '../../../kernel/errors.js';
import type { Composition, StatusFeed } from '../composition.js';
import { followLive, type StatusChangeFeed } from './subscription.js';

/**
 * The compositions a subscriber of `status` gets (`followLive` without changes): the current one
 * first (when there is one and `fromCurrent` is not false), then each newer one; a slow reader
 * skips to the latest, and with `everyMs` at most one is handed out per interval, the latest.
 */
export function followLatest(feed: StatusChangeFeed, options: { everyMs?: number; fromCurrent?: boolean } = {}): AsyncIterableIterator<Composition> {
  const steps = followLive(feed, options);
  return {
    async next() {
      const step = await steps.next();
      return step.done ? step : { value: step.value.composition!, done: false };
    },
    return: async () => (await steps.return!()) as IteratorResult<Composition>,
    [Symbol.asyncIterator]() {
      return this;
    },
  };
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

import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { Unavailable } from '../../../kernel/errors.js';
import type { Composition, StatusFeed } from '../composition.js';
import type { StatusDelta } from '../delta/delta.js';
import { StatusHistory } from '../looking-back/history.js';
import { compositionAssembler } from '../replicating/full-wire.js';
import { type FollowerStats, followStatusStream, type StatusStreamLink } from '../replicating/stream-follower.js';
import { statusPublisher } from '../replicating/stream-publisher.js';
import { RecentDeltas } from './recent.js';

export { compositionAssembler, encodeComposition, PART_HEADER, publishComposition, SEQ_HEADER, type StatusPart } from '../replicating/full-wire.js';

/** A feed whose listeners also get the delta that brought the replica to each composition, when one did. */
export interface StatusChangeFeed extends StatusFeed {
  subscribe(listener: (composition: Composition, delta?: StatusDelta) => void): () => void;
  /** The deltas from composition `seq` to the one held, in order ([] when `seq` is held); undefined when not kept (RESUME_DELTAS_MAX). */
  changesAfter?(seq: number): StatusDelta[] | undefined;
}

export interface RunningStatusFeed extends StatusChangeFeed {
  /** How many compositions of another controller were heard on this subject and ignored. */
  foreignIgnored(): number;
  changesAfter(seq: number): StatusDelta[] | undefined;
  /** Keeps a composition newer than the one held (with the delta to it from the one held, when there is one) and hands it on. */
  accept(composition: Composition, delta?: StatusDelta): boolean;
  /** Looks back in the status stream (`statusAt`, `machineHistory`); absent without one. */
  history: StatusHistory | undefined;
  /**
   * Resolves once the status stream as it was at the start has been read (at once without one, and
   * after STATUS_FIRST_WAIT_MS at most), so the composer continues its chain of deltas.
   */
  caughtUp(): Promise<void>;
  /** Snapshots, deltas and gaps read from the status stream (zero without one). */
  streamStats(): FollowerStats;
  stop(): Promise<void>;
}

/** A replica warns about the first foreign composition and then every this many, so a shared subject is seen, not flooded. */
const FOREIGN_WARN_EVERY = 100;

/**
 * Every replica's view of the status. With a status stream (`link`), it follows the stream
 * (`followStatusStream`: the last snapshot, then each delta applied) and publishes through it when
 * serving (`statusPublisher`); it also hears `<subjects>.status` (no queue group), where snapshots
 * go whole. It keeps the newest by seq and hands each newer one to the listeners. A message that
 * is not a composition is logged and skipped; an older seq than the one kept is ignored.
 */
export function startStatusFeed(nc: NatsConnection, subject: string, logger: Logger, controller?: string, link?: StatusStreamLink): RunningStatusFeed {
  let last: Composition | undefined;
  let foreign = 0;
  const recent = new RecentDeltas();
  const listeners = new Set<(c: Composition, delta?: StatusDelta) => void>();
  const assemble = compositionAssembler();
  let chain = Promise.resolve();
  const accept = (composition: Composition | undefined, delta?: StatusDelta): boolean => {
    if (!composition) return false;
    if (controller && typeof composition.controller === 'string' && composition.controller !== controller) {
      // Two controllers on one MESH_SUBJECTS would interleave their meshes: keep ours, say so.
      if (foreign++ % FOREIGN_WARN_EVERY === 0) {
        logger.warn(
          { subject, theirs: composition.controller, ours: controller, ignored: foreign },
          'a composition of another controller on our status subject: ignored (is MESH_SUBJECTS shared?)',
        );
      }
      return false;
    }
    if (last && composition.seq <= last.seq) return false;
    const step = delta && last && delta.baseSeq === last.seq && delta.seq === composition.seq ? delta : undefined;
    last = composition;
    recent.push(step);
    for (const listener of listeners) {
      try {
        listener(composition, step);
      } catch (err) {
        logger.error({ err }, 'a status listener failed');
      }
    }
    return true;
  };
  const sub: Subscription = nc.subscribe(subject, {
    callback: (err, msg) => {
      if (err) return logger.error({ err }, 'status subscription failed');
      // In order: a large composition's parts are gunzipped off the event loop, and arrive in order.
      chain = chain.then(() => assemble(msg).then((c) => void accept(c))).catch((error) => logger.warn({ err: error, subject }, 'not a composition: ignored'));
    },
  });
  const current = () => last;
  let publishing: number | undefined;
  const follower = link ? followStatusStream(link, { current, accept }, logger, { nc, publishing: () => publishing }) : undefined;
  const publish = link
    ? statusPublisher({ nc, js: link.js, subjects: link.subjects, fullSubject: subject, current, accept, logger, onPublishing: (seq) => (publishing = seq) })
    : undefined;
  return {
    current,
    foreignIgnored: () => foreign,
    changesAfter: (seq) => recent.after(seq, last?.seq),
    accept,
    ...(publish && { publish }),
    history: link ? new StatusHistory(link, { current, subscribe: (l) => (listeners.add(l), () => listeners.delete(l)) }) : undefined,
    streamStats: () => follower?.stats ?? { snapshots: 0, deltas: 0, gaps: 0 },
    caughtUp: () =>
      follower ? Promise.race([follower.caughtUp, new Promise<void>((resolve) => setTimeout(resolve, STATUS_FIRST_WAIT_MS).unref())]) : Promise.resolve(),
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async stop() {
      sub.unsubscribe();
      listeners.clear();
      await follower?.stop();
      await chain;
    },
  };
}

/** `everyMs` above this (an hour) is refused: a dashboard that rare wants `status` as a query. */
export const EVERY_MS_MAX = 3_600_000;

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

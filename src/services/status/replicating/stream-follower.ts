import { type ConsumerMessages, DeliverPolicy, type JetStreamClient, type JetStreamManager, type StoredMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { StatusStreamSubjects } from '../../../bus/status-stream.js';
import type { Composition } from '../composition.js';
import { applyDelta, type StatusDelta } from '../delta/delta.js';
import { statusAssembler } from './assemble.js';
import type { StatusSeal } from './seal.js';
import { framingOf, type StreamEntry, type StreamMessage, snapshotStartOf } from './wire.js';

/** A read of the stream that fails (NATS restarting) is tried again this long after. */
export const FOLLOW_RETRY_MS = 1_000;

/** How a replica reaches its status stream. */
export interface StatusStreamLink {
  js: JetStreamClient;
  jsm: JetStreamManager;
  stream: string;
  subjects: StatusStreamSubjects;
  /** Asks the serving replica for a snapshot (a poke with trigger `resync`): after a gap no newer one is in the stream yet. */
  askSnapshot(): void;
  /**
   * The status's seal (`statusSeal`): what the serving replica publishes is sealed with it, and
   * only what it seals is taken, from the stream and from `<subjects>.status`. The gateway always
   * has one; without it (a test of the stream alone) every well-formed message is taken.
   */
  sealing?: StatusSeal;
}

export interface FollowerStats {
  snapshots: number;
  deltas: number;
  /** Deltas that did not apply to the composition held (one missing or out of order): each made the replica fetch a snapshot. */
  gaps: number;
}

export const storedAsMessage = (m: StoredMsg): StreamMessage => ({ seq: m.seq, data: m.data, headers: m.header, time: m.time.getTime() });

/**
 * The stream sequence where the last snapshot begins, and its composition seq; undefined when the
 * stream holds none, or when the last one is not sealed by the serving replica (counted: a forged
 * snapshot put last is not where a replica starts; it asks for a new one).
 */
async function lastSnapshot(
  link: Pick<StatusStreamLink, 'jsm' | 'stream' | 'subjects' | 'sealing' | 'askSnapshot'>,
): Promise<{ start: number; seq: number } | undefined> {
  const last = await link.jsm.streams.getMessage(link.stream, { last_by_subj: link.subjects.snapshot }).catch((error: Error) => {
    if (/no message found|not found/i.test(error.message)) return null;
    throw error;
  });
  if (!last) return undefined;
  const refusal = await link.sealing?.check(last.header, last.data);
  if (refusal) {
    link.sealing?.refuse(refusal, { streamSeq: last.seq, err: 'the last snapshot in the status stream is not the serving replica’s: asking for one' });
    link.askSnapshot();
    return undefined;
  }
  const framing = framingOf({ seq: last.seq, headers: last.header });
  const start = snapshotStartOf({ seq: last.seq, headers: last.header });
  return framing && start !== undefined ? { start, seq: framing.seq } : undefined;
}

/** What the follower's parts share: stopped, a restart asked (a newer snapshot to read from), the consumer's messages. */
interface Following {
  stopped: boolean;
  restart: boolean;
  messages: ConsumerMessages | undefined;
}

type FollowedFeed = { current(): Composition | undefined; accept(composition: Composition, delta: StatusDelta | undefined): void };

/**
 * A replica's reading of the status stream: from the last snapshot, then every delta after it,
 * each applied to the composition held. A delta that does not apply (its base is not the seq held:
 * one went missing, or came out of order) is never applied: the replica keeps serving what it
 * holds, reads the last snapshot again when it is newer, else asks for one and skips deltas until
 * it comes. An ordered consumer (no state on the server) follows NATS restarts by itself.
 *
 * Once caught up, live messages are also taken as they cross NATS (`live`: a core subscription to
 * the stream's subjects), whichever comes first: the consumer lives on the stream's leader, and a
 * lost NATS node costs it seconds to come back, during which a replica would hold an old
 * composition (and a subscriber moving to it would see the seq go back).
 */
export function followStatusStream(
  link: StatusStreamLink,
  feed: FollowedFeed,
  logger: Logger,
  live?: { nc: NatsConnection /** The seq this replica is putting into the stream itself, if any: not read back. */; publishing(): number | undefined },
): { stats: FollowerStats; caughtUp: Promise<void>; readUpToNow(): Promise<void>; stop(): Promise<void> } {
  const stats: FollowerStats = { snapshots: 0, deltas: 0, gaps: 0 };
  const progress = readProgress();
  const following: Following = { stopped: false, restart: false, messages: undefined };
  const resync = async (held: number) => {
    try {
      const last = await lastSnapshot(link);
      if (last && last.seq > held) {
        following.restart = true;
        following.messages?.stop();
      } else link.askSnapshot();
    } catch (err) {
      logger.warn({ err: String(err) }, 'reading the last status snapshot failed; asking for one');
      link.askSnapshot();
    }
  };
  const chain = deltaChain(feed, stats, logger, (held) => void resync(held));
  const running = consumeStream(link, feed, logger, following, progress, chain);
  const liveFollow = live && followLive(link, feed, logger, { ...live, following, progress, chain });
  return {
    stats,
    caughtUp: progress.caughtUp,
    // What the stream holds now, read: a replica taking the lease after a freeze composes on the
    // last composition the one before it showed (its floor), not on what it held when it froze.
    async readUpToNow() {
      const last = (await link.jsm.streams.info(link.stream)).state.last_seq;
      if (progress.readSeq() < last && !following.stopped) await progress.waitFor(last);
      // Read up to now, yet still waiting for a snapshot to mend a gap: the composition held is older than what was shown.
      if (chain.isBroken())
        logger.warn(
          { held: feed.current()?.seq, streamSeq: last },
          'read the status stream up to now with its chain of deltas broken: the composition held is behind what was shown',
        );
    },
    async stop() {
      following.stopped = true;
      progress.release();
      liveFollow?.unsubscribe();
      following.messages?.stop();
      await running;
      await liveFollow?.drained();
    },
  };
}

/** How far the stream is read: caught up with what it held at the start, and who waits for a stream sequence (readUpToNow). */
function readProgress() {
  // Resolved once what the stream held at the start has been read (or found empty), so a replica
  // about to serve continues the stream's chain of deltas rather than starting one of its own.
  let caughtUpAt = Number.POSITIVE_INFINITY;
  let markCaughtUp!: () => void;
  let isCaughtUp = false;
  const caughtUp = new Promise<void>((resolve) => {
    markCaughtUp = () => {
      isCaughtUp = true;
      resolve();
    };
  });
  // The last stream sequence read, and who waits for one (readUpToNow).
  let readSeq = 0;
  const waiting = new Set<{ seq: number; resolve: () => void }>();
  return {
    caughtUp,
    isCaughtUp: () => isCaughtUp,
    markCaughtUp: () => markCaughtUp(),
    /** Whether the stream sequence that is caught up at is yet to be learned. */
    aimless: () => caughtUpAt === Number.POSITIVE_INFINITY,
    catchUpAt(seq: number) {
      caughtUpAt = seq;
    },
    /** A stream sequence read (or passed over): caught up at its end, waiters on it released. */
    read(seq: number) {
      if (seq >= caughtUpAt) markCaughtUp();
      readSeq = Math.max(readSeq, seq);
      for (const waiter of waiting) if (readSeq >= waiter.seq) waiting.delete(waiter), waiter.resolve();
    },
    readSeq: () => readSeq,
    waitFor: (seq: number) => new Promise<void>((resolve) => waiting.add({ seq, resolve })),
    release() {
      for (const waiter of waiting) waiter.resolve();
      waiting.clear();
    },
  };
}
type ReadProgress = ReturnType<typeof readProgress>;

/** While the chain is broken, the snapshot is asked again this often: an ask lost, or a snapshot refused, does not leave it broken until the next periodic one. */
export const RESYNC_AGAIN_MS = 5_000;

/**
 * The chain of deltas applied to the composition held; broken by a delta that does not apply,
 * until a snapshot mends it or a delta on the seq held comes (the live path and the stream's can
 * deliver a delta before the one it is based on: after a freeze, the live one first).
 */
export function deltaChain(feed: FollowedFeed, stats: FollowerStats, logger: Logger, resync: (held: number) => void) {
  let broken = false;
  let askedAt = 0;
  return {
    isBroken: () => broken,
    /** A snapshot of the seq held was read again: the chain holds. */
    mend() {
      broken = false;
    },
    take(entry: StreamEntry) {
      const held = feed.current();
      if (entry.kind === 'snapshot') {
        if (!held || entry.seq > held.seq) {
          stats.snapshots++;
          feed.accept(entry.composition, undefined);
        }
        if (!held || entry.seq >= held.seq) broken = false;
        return;
      }
      if (held && entry.seq <= held.seq) return;
      if (held && held.seq === entry.delta.baseSeq) {
        broken = false;
        stats.deltas++;
        feed.accept(Object.freeze(applyDelta(held, entry.delta)), entry.delta);
        return;
      }
      if (broken) {
        if (Date.now() - askedAt < RESYNC_AGAIN_MS) return;
      } else {
        broken = true;
        stats.gaps++;
        logger.warn(
          { held: held?.seq, base: entry.delta.baseSeq, seq: entry.seq },
          'a status delta does not apply to the composition held: fetching a snapshot',
        );
      }
      askedAt = Date.now();
      resync(held?.seq ?? 0);
    },
  };
}
type DeltaChain = ReturnType<typeof deltaChain>;

// An ordered consumer from the last snapshot (or from now when there is none), read again from
// the start after a failure or when a newer snapshot is to be read from (`restart`).
async function consumeStream(link: StatusStreamLink, feed: FollowedFeed, logger: Logger, following: Following, progress: ReadProgress, chain: DeltaChain) {
  while (!following.stopped) {
    try {
      following.restart = false;
      const last = await lastSnapshot(link);
      if (!last) progress.markCaughtUp();
      else if (progress.aimless()) progress.catchUpAt((await link.jsm.streams.info(link.stream)).state.last_seq);
      const consumer = await link.js.consumers.get(
        link.stream,
        last ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: last.start } : { deliver_policy: DeliverPolicy.New },
      );
      if (following.stopped) return;
      following.messages = await consumer.consume();
      // Stopped while the consumer was being made: nothing would end the loop below.
      if (following.stopped) return;
      const assemble = statusAssembler({ sealing: link.sealing, held: () => feed.current()?.seq });
      for await (const m of following.messages) {
        // What it holds already (its own, on the serving replica) is not even gunzipped or parsed.
        const framing = framingOf({ seq: m.seq, headers: m.headers });
        const held = feed.current()?.seq;
        if (framing && held !== undefined && framing.seq <= held) {
          if (framing.kind === 'snapshot' && framing.seq === held) chain.mend();
          progress.read(m.seq);
          continue;
        }
        const entry = await assemble({ seq: m.seq, data: m.data, headers: m.headers, time: m.time.getTime() }).catch((err) => {
          logger.warn({ err: String(err), streamSeq: m.seq }, 'not a status stream message: ignored');
          return undefined;
        });
        if (entry) chain.take(entry);
        progress.read(m.seq);
        if (following.restart || following.stopped) break;
      }
    } catch (err) {
      if (following.stopped) return;
      logger.warn({ err: String(err), retryInMs: FOLLOW_RETRY_MS }, 'reading the status stream failed');
      await new Promise((resolve) => setTimeout(resolve, FOLLOW_RETRY_MS));
    } finally {
      following.messages?.stop();
      following.messages = undefined;
    }
    if (!following.restart && !following.stopped) await new Promise((resolve) => setTimeout(resolve, FOLLOW_RETRY_MS));
  }
}

// Live messages as they cross NATS, once caught up, taken in order; what this replica is putting
// into the stream itself is not read back.
function followLive(
  link: StatusStreamLink,
  feed: FollowedFeed,
  logger: Logger,
  live: { nc: NatsConnection; publishing(): number | undefined; following: Following; progress: ReadProgress; chain: DeltaChain },
): { unsubscribe(): void; drained(): Promise<void> } {
  const { following, progress, chain } = live;
  const liveAssemble = statusAssembler({ sealing: link.sealing, held: () => feed.current()?.seq });
  let liveChain = Promise.resolve();
  const liveSub = live.nc.subscribe(link.subjects.all, {
    callback: (err, m) => {
      if (err || following.stopped || !progress.isCaughtUp()) return;
      const framing = framingOf({ seq: 0, headers: m.headers });
      const held = feed.current()?.seq;
      if (!framing || (held !== undefined && framing.seq <= held) || framing.seq === live.publishing()) return;
      liveChain = liveChain
        .then(async () => {
          const entry = await liveAssemble({ seq: 0, data: m.data, headers: m.headers, time: Date.now() });
          if (entry && !following.stopped) chain.take(entry);
        })
        .catch((error) => logger.warn({ err: String(error) }, 'not a status stream message: ignored'));
    },
  });
  return { unsubscribe: () => liveSub.unsubscribe(), drained: () => liveChain };
}

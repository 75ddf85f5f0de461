import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { ComposeTrigger } from '../composing/poke.js';
import type { Composition } from '../composition.js';
import type { StatusDelta } from '../delta/delta.js';
import { StatusHistory } from '../looking-back/history.js';
import { compositionAssembler } from '../replicating/assemble.js';
import { publishComposition } from '../replicating/encode.js';
import { type FollowerStats, followStatusStream, type StatusStreamLink } from '../replicating/stream-follower.js';
import { type Published, statusPublisher } from '../replicating/stream-publisher.js';
import { statusSeqOf } from '../replicating/wire.js';
import { STATUS_FIRST_WAIT_MS } from './latest.js';
import { RecentDeltas } from './recent.js';
import type { StatusChangeFeed } from './subscription.js';

export interface RunningStatusFeed extends StatusChangeFeed {
  /** How many compositions of another controller were heard on this subject and ignored. */
  foreignIgnored(): number;
  changesAfter(seq: number): StatusDelta[] | undefined;
  /** Looks back in the status stream (`statusAt`, `machineHistory`); absent without one. */
  history: StatusHistory | undefined;
  /**
   * Resolves once the status stream as it was at the start has been read (at once without one, and
   * after STATUS_FIRST_WAIT_MS at most), so the composer continues its chain of deltas.
   */
  caughtUp(): Promise<void>;
  /**
   * Resolves once what the status stream holds now has been read (at once without one, after
   * STATUS_FIRST_WAIT_MS at most, and when the stream cannot be asked): a takeover's floor.
   */
  readUpToNow(): Promise<void>;
  /** Snapshots, deltas and gaps read from the status stream (zero without one). */
  streamStats(): FollowerStats;
  stop(): Promise<void>;
}

/** A replica warns about the first foreign composition and then every this many, so a shared subject is seen, not flooded. */
const FOREIGN_WARN_EVERY = 100;

/**
 * Every replica's view of the status, and its wiring. With a status stream (`link`), it follows the
 * stream (`followStatusStream`: the last snapshot, then each delta applied) and, when serving,
 * publishes through it (`statusPublisher` puts and returns what it put; kept here, then sent whole
 * on `<subjects>.status` when a snapshot or not taken); it also hears `<subjects>.status` (no
 * queue group), where snapshots go whole. It keeps the newest by seq and hands each newer one to
 * the listeners. A message that is not a composition is logged and skipped; an older seq than the
 * one kept is ignored.
 */
export function startStatusFeed(nc: NatsConnection, subject: string, logger: Logger, controller?: string, link?: StatusStreamLink): RunningStatusFeed {
  let last: Composition | undefined;
  const foreign = foreignCompositions(subject, logger, controller);
  const recent = new RecentDeltas();
  const listeners = new Set<(c: Composition, delta?: StatusDelta) => void>();
  // Only the serving replica's compositions are taken (the seal), none far past the one held.
  const assemble = compositionAssembler({ sealing: link?.sealing, held: () => last?.seq });
  let chain = Promise.resolve();
  const accept = (composition: Composition | undefined, delta?: StatusDelta): boolean => {
    if (!composition) return false;
    if (foreign.ignores(composition)) return false;
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
      // One this replica holds already (on the serving replica, its own snapshot; elsewhere, one
      // the status stream gave it) is not joined, gunzipped nor parsed: at a million machines
      // that is 2–3 s of the event loop a snapshot, every SNAPSHOT_EVERY_MS.
      const seq = statusSeqOf(msg.headers);
      if (seq !== undefined && last && seq <= last.seq) return;
      // In order: a large composition's parts are gunzipped off the event loop, and arrive in order.
      chain = chain.then(() => assemble(msg).then((c) => void accept(c))).catch((error) => logger.warn({ err: error, subject }, 'not a composition: ignored'));
    },
  });
  const current = () => last;
  let publishing: number | undefined;
  const follower = link ? followStatusStream(link, { current, accept }, logger, { nc, publishing: () => publishing }) : undefined;
  const publisher = link ? statusPublisher({ nc, js: link.js, subjects: link.subjects, current, logger, sealing: link.sealing }) : undefined;
  // What the publisher put is kept here, then (a snapshot, or one the stream did not take) sent
  // whole on the subject; the follower does not read back the seq being put meanwhile.
  const publish =
    publisher &&
    (async (composition: Composition, ...triggers: ComposeTrigger[]) => {
      publishing = composition.seq;
      let published: Published;
      try {
        published = await publisher(composition, ...triggers);
      } finally {
        publishing = undefined;
      }
      accept(published.composition, published.delta);
      if (published.whole) await publishComposition(nc, subject, published.composition, link?.sealing);
    });
  return {
    current,
    foreignIgnored: foreign.ignored,
    changesAfter: (seq) => recent.after(seq, last?.seq),
    ...(publish && { publish }),
    history: link ? new StatusHistory(link, { current, subscribe: (l) => (listeners.add(l), () => listeners.delete(l)) }) : undefined,
    streamStats: () => follower?.stats ?? { snapshots: 0, deltas: 0, gaps: 0 },
    caughtUp: () => (follower ? withinFirstWait(follower.caughtUp) : Promise.resolve()),
    readUpToNow: () => (follower ? withinFirstWait(follower.readUpToNow().catch(() => undefined)) : Promise.resolve()),
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

/** Resolves when `reading` does, or after STATUS_FIRST_WAIT_MS at most. */
const withinFirstWait = (reading: Promise<void>): Promise<void> =>
  Promise.race([reading, new Promise<void>((resolve) => setTimeout(resolve, STATUS_FIRST_WAIT_MS).unref())]);

// Two controllers on one MESH_SUBJECTS would interleave their meshes: keep ours, say so.
function foreignCompositions(subject: string, logger: Logger, controller: string | undefined) {
  let foreign = 0;
  return {
    /** Whether `composition` is another controller's: counted, and warned of the first and every FOREIGN_WARN_EVERY. */
    ignores(composition: Composition): boolean {
      if (!controller || typeof composition.controller !== 'string' || composition.controller === controller) return false;
      if (foreign++ % FOREIGN_WARN_EVERY === 0) {
        logger.warn(
          { subject, theirs: composition.controller, ours: controller, ignored: foreign },
          'a composition of another controller on our status subject: ignored (is MESH_SUBJECTS shared?)',
        );
      }
      return true;
    },
    ignored: () => foreign,
  };
}

import type { Logger } from 'pino';
import type { Leases } from '../../replicas/leases.js';
import type { StatusFeed } from '../composition.js';

/** What the composer needs of the serving lease (src/services/replicas/leases.ts). */
export type ServingLease = Pick<Leases, 'isServing' | 'onServingChange'>;

/** What following the serving lease starts and stops. */
export interface LeaseFollowing {
  lease: ServingLease;
  feed: Pick<StatusFeed, 'current' | 'readUpToNow'>;
  logger: Logger;
  replica: string;
  /** Whether this replica composed before: taking the lease again is a takeover, not a start. */
  composedOnce(): boolean;
  /** Asks the composition of taking the lease. */
  compose(trigger: 'start' | 'takeover'): void;
  /** Stops composing: the lease is lost, or lapsed (its view kept aside for `resume`). */
  stopComposing(): void;
  /** Composes on from where it was: the lease taken back in the term it lapsed in, no other replica having served. */
  resume(): void;
  /** This replica does not serve as it starts. */
  notServing(): void;
}

/**
 * Composes when this replica takes the serving lease (`start`, or `takeover` after another held
 * it, once the stream is read up to now), stops composing when it loses it. Returns the stop.
 */
export function followServingLease(following: LeaseFollowing): () => void {
  const { lease, feed, logger, replica } = following;
  const took = (trigger: 'start' | 'takeover') => {
    logger.info({ replica, trigger }, 'took the serving lease: composing the status');
    following.compose(trigger);
  };
  const off = lease.onServingChange((held, resumed) => {
    // A stall that outlasted the trust in the lease, and no other replica took it: no one composed
    // since, so composing starts again from what this replica holds, not from the whole store
    // (at a million machines, on a loaded machine, a whole composition outlasted the next stall).
    if (held && resumed) {
      logger.info({ replica }, 'took the serving lease back in the same term: composing on from where it was');
      following.resume();
    }
    // A takeover first reads what the replica before showed (the stream, now): what it showed is
    // each state's floor, and a replica that was frozen holds an older one (docs/status.md).
    else if (held && (following.composedOnce() || feed.current()))
      void (feed.readUpToNow?.() ?? Promise.resolve()).then(() => lease.isServing() && took('takeover'));
    else if (held) took('start');
    else {
      logger.warn({ replica }, 'lost the serving lease: no longer composing');
      following.stopComposing();
    }
  });
  if (lease.isServing()) took('start');
  else following.notServing();
  return off;
}

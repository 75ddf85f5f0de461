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
  /** Stops composing: the lease is lost. */
  stopComposing(): void;
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
  const off = lease.onServingChange((held) => {
    // A takeover first reads what the replica before showed (the stream, now): what it showed is
    // each state's floor, and a replica that was frozen holds an older one (docs/status.md).
    if (held && (following.composedOnce() || feed.current()))
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

import { LEASE_REFRESH_MS, LEASE_TTL_MS } from '../replicas/leases.js';

/** How long news is collected before it is written: a few ms, so one transaction carries many beats. */
export const NEWS_BATCH_MS = 5;
/**
 * A batch holds at most this many messages. Beats of one machine in a batch are written as one
 * row, so under a high rate a larger batch costs the store no more than the mesh has machines;
 * the writes are still cut into transactions of HEARTBEAT_CHUNK_PAIRS.
 */
export const NEWS_BATCH_MAX = 100_000;
/** News waiting to be written is bounded: at this many, no more is pulled from the stream until a batch is written. */
export const NEWS_PENDING_MAX = 200_000;
/**
 * A replica holds (pulled and not yet written) at most about this long of the news it writes: what
 * it cannot write in that time stays in the stream, where another replica can pull it, and a
 * replica that dies or freezes holds back no more than this of the mesh (docs/status.md).
 */
export const NEWS_HELD_MS = 1_000;
/** ...but never fewer than this many messages, so a quiet start is not throttled. */
export const NEWS_HELD_MIN = 1_000;
/** One pull from the news stream asks for at most this many messages (the fetch size measured when the stack was chosen; docs/status.md, "The consumer"). */
export const NEWS_FETCH_MAX = 10_000;
/** After a pull failed (NATS restarting, the consumer being re-created) the next is tried this much later. */
export const NEWS_PULL_RETRY_MS = 1_000;
/**
 * Heartbeats go to the store in transactions of at most this many (machine, module) pairs, so the
 * row locks one transaction holds are released within a few hundred milliseconds.
 */
export const HEARTBEAT_CHUNK_PAIRS = 5_000;
/** Every this often a replica records how far its partitions of the news are written, gives up those no longer its own and takes those that are. */
export const PARTITIONS_EVERY_MS = 500;
/**
 * A replica that has not recorded its partitions for this long (half LEASE_TTL_MS: it froze, or the
 * store was away) may have been thought gone and its partitions taken: it records them, learning
 * which are still its own, before it writes another batch, so it does not write what their new owner writes.
 */
export const PARTITIONS_FENCE_MS = LEASE_TTL_MS / 2;
/**
 * A partition's owner is taken from only once this replica has not seen its lease alive for this
 * long while running (two lease refreshes): a view of the leases read just after a freeze is stale.
 */
export const PARTITIONS_GONE_MS = 2 * LEASE_REFRESH_MS;

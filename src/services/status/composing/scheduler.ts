/** At most one composition starts per this many ms (4 a second) however much news arrives. */
export const COMPOSE_MIN_GAP_MS = 250;
/** The serving replica composes at least this often, so states by heartbeat age move without news. */
export const COMPOSE_EVERY_MS = 60_000;

/**
 * A composition that failed because the store is unavailable is asked again this long after, so
 * compositions (and the crossing timer, set by each one) resume by themselves once it is back.
 */
export const COMPOSE_RETRY_MS = 2_000;

import type { Logger } from 'pino';

/**
 * The event loop standing still this long is logged: past it, the lease refreshes (every
 * LEASE_REFRESH_MS) and NATS replies wait behind whatever holds it, so a log of a lost lease
 * says whether this process stood still or NATS was slow.
 */
export const EVENT_LOOP_STALL_LOG_MS = 1_000;
const STALL_CHECK_MS = 200;

/**
 * Logs each stall of this process's event loop of EVENT_LOOP_STALL_LOG_MS or more (a long
 * synchronous piece of work, a GC pause, a SIGSTOP): how long it stood. Returns the stop.
 */
export function watchEventLoopStalls(logger: Logger): () => void {
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    const stoodMs = now - last - STALL_CHECK_MS;
    last = now;
    if (stoodMs >= EVENT_LOOP_STALL_LOG_MS)
      logger.warn({ stoodMs: Math.round(stoodMs) }, 'the event loop stood still: timers, lease refreshes and NATS replies waited');
  }, STALL_CHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}

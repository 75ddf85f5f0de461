import type { Logger } from 'pino';

/**
 * Malformed news is logged at most once per this interval (plus the first at once): a broken agent
 * shows within seconds, and a flood of junk costs one line per interval, not one per message.
 */
export const MALFORMED_LOG_EVERY_MS = 10_000;
/** A summary line carries at most this many samples (subject, reason, size). */
export const MALFORMED_SAMPLES_MAX = 5;

export interface MalformedSample {
  subject: string;
  reason: string;
  bytes: number;
}

/**
 * Logs malformed news: the first of a quiet period at once, the rest as one summary per
 * MALFORMED_LOG_EVERY_MS with the count and up to MALFORMED_SAMPLES_MAX samples. `drain` logs what
 * is counted and not yet logged.
 */
export function malformedLog(logger: Logger): { note(sample: MalformedSample): void; drain(): void; stop(): void } {
  let count = 0;
  let samples: MalformedSample[] = [];
  let since = 0;
  let window: NodeJS.Timeout | undefined;
  const drain = () => {
    if (count === 0) return;
    logger.warn({ count, samples, sinceMs: Date.now() - since }, 'malformed news ignored');
    count = 0;
    samples = [];
  };
  const tick = () => {
    window = undefined;
    if (count === 0) return; // quiet: the next one is logged at once
    drain();
    open();
  };
  const open = () => {
    since = Date.now();
    window = setTimeout(tick, MALFORMED_LOG_EVERY_MS);
    window.unref();
  };
  return {
    note(sample) {
      if (!window) {
        logger.warn({ count: 1, samples: [sample], ...sample }, 'malformed news ignored');
        open();
        return;
      }
      count++;
      if (samples.length < MALFORMED_SAMPLES_MAX) samples.push(sample);
    },
    drain,
    stop() {
      drain();
      if (window) clearTimeout(window);
      window = undefined;
    },
  };
}

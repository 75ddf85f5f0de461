import { nextStateChangeMs } from '../../machines/machines.js';
import type { NewsHearing } from '../../news/hearing.js';
import type { Composition } from '../composition.js';
import { COMPOSE_EVERY_MS } from './scheduler.js';

/** While the news heard is behind a machine's crossing that the clock has passed, the watermark is read this often. */
export const CROSSING_RECHECK_MS = 100;

/** A state boundary is asked for this long after it is crossed, so the composition sees the machine past it. */
export const CROSSING_SLACK_MS = 5;

/**
 * The earliest heard instant after a composition at which a machine of it changes state by heartbeat
 * age alone (UP → LATE, LATE → SILENT); undefined when none will. One pass over the machines.
 * The composer takes the same instant from its composing pass (`MeshView.crossingMs`), cheaper.
 */
export function nextCrossing(composition: Composition, heartbeatSeconds: number): Date | undefined {
  const judging = { heardUntilMs: Date.parse(composition.heardUntil ?? composition.composedAt), heartbeatSeconds };
  let earliest: number | undefined;
  for (const machine of composition.machines) {
    const at = nextStateChangeMs(Date.parse(machine.lastHeardAt), judging);
    if (at !== undefined && (earliest === undefined || at < earliest)) earliest = at;
  }
  return earliest === undefined ? undefined : new Date(earliest);
}

/** The crossing timer: set by each composition to when a machine of it next changes state by age. */
export interface CrossingTimer {
  /** Sets the timer to `at` (the last composition's crossing), in place of the one set before; none when undefined. */
  arm(at: Date | undefined): void;
  stop(): void;
}

type CrossingHearing = Pick<NewsHearing, 'refresh' | 'onRead'>;

/**
 * A machine turns LATE or SILENT with time, not news: compose when the earliest one crosses
 * (found while composing: a pass over 100,000 machines' ISO instants here costs ~200 ms). The
 * crossing is a heard instant: when the wall clock has passed it but the news heard has not
 * (this gateway is behind), the composition waits for the watermark to pass it, not the clock.
 * `hearing` absent (a test's mesh): states are judged at the wall clock.
 */
export function crossingTimer(hearing: CrossingHearing | undefined, request: (trigger: 'state-change') => void): CrossingTimer {
  let timer: NodeJS.Timeout | undefined;
  let crossingHeard: number | undefined;
  let stopped = false;
  const offHeard = hearing?.onRead((heard) => {
    if (crossingHeard === undefined || heard.heardUntilMs < crossingHeard) return;
    crossingHeard = undefined;
    request('state-change');
  });
  // Behind: the watermark is read again every CROSSING_RECHECK_MS until it passes the crossing.
  const awaitWatermark = (at: number, behind: CrossingHearing) => {
    crossingHeard = at;
    timer = setTimeout(function recheck() {
      if (crossingHeard === undefined || stopped) return;
      void behind.refresh();
      timer = setTimeout(recheck, CROSSING_RECHECK_MS);
      timer.unref();
    }, CROSSING_RECHECK_MS);
    timer.unref();
  };
  return {
    arm(at) {
      if (timer) clearTimeout(timer);
      timer = undefined;
      crossingHeard = undefined;
      if (!at || stopped) return;
      const wait = at.getTime() - Date.now();
      if (wait < 0 && hearing) return awaitWatermark(at.getTime(), hearing);
      if (wait + CROSSING_SLACK_MS >= COMPOSE_EVERY_MS) return; // the minute's composition comes first
      timer = setTimeout(() => {
        timer = undefined;
        request('state-change');
      }, Math.max(0, wait) + CROSSING_SLACK_MS);
      timer.unref();
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      offHeard?.();
    },
  };
}

import { nextStateChangeMs } from '../../machines/machines.js';
import type { Composition } from '../composition.js';

/** While the news written is behind a machine's crossing that the clock has passed, the watermark is read this often. */
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

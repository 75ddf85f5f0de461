import { type Judging, type MachineState, machineState, STATE_RANK } from './machines.js';

/**
 * The last-heard instants of the machines `machineState` judges `is` under `judging`: heard at or
 * after `fromMs` and before `beforeMs` (either open when absent), for a filter kept in SQL. Found
 * from `machineState` itself, so the one rule (deaf spans included) decides: a machine's state only
 * worsens as its last beat is older, so each state is one range of last-heard instants.
 */
export function heardBoundsOf(is: MachineState, judging: Judging): { fromMs?: number; beforeMs?: number } {
  const finite = (ms: number | undefined) => (ms !== undefined && Number.isFinite(ms) ? ms : undefined);
  const upFrom = earliestHeardAtLeast('UP', judging);
  const lateFrom = earliestHeardAtLeast('LATE', judging);
  if (is === 'UP') return { fromMs: finite(upFrom) };
  if (is === 'LATE') return { fromMs: finite(lateFrom), beforeMs: upFrom };
  return { beforeMs: lateFrom };
}

/**
 * The earliest last-heard instant (whole ms) judged `state` or better: searched down from
 * `heardUntilMs`, then halved; -Infinity when every instant is (a deaf span reaching back).
 */
function earliestHeardAtLeast(state: MachineState, judging: Judging): number {
  const good = (ms: number) => STATE_RANK[machineState(ms, judging)] <= STATE_RANK[state];
  const hi = Math.floor(judging.heardUntilMs);
  let step = Math.max(1, Math.ceil(judging.heartbeatSeconds * 1000));
  while (good(hi - step)) {
    if (step > 2 ** 45) return Number.NEGATIVE_INFINITY;
    step *= 2;
  }
  let bad = hi - step;
  let ok = hi;
  while (ok - bad > 1) {
    const mid = bad + Math.floor((ok - bad) / 2);
    if (good(mid)) ok = mid;
    else bad = mid;
  }
  return ok;
}

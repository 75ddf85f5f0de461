import type { Logger } from 'pino';
import { logJobFailure } from '../../kernel/errors.js';
import { byName } from '../../kernel/names.js';
import type { Store } from '../../store/db.js';
import type { MeshEvents } from '../events.js';
import type { DeafSpan } from '../machines/machines.js';
import type { Leases } from '../replicas/leases.js';
import { awaitingReport } from './applies.js';

/** The sweep looks for timed-out applies at most this far apart: every min(5 s, the time-out / 4). */
export const APPLY_SWEEP_EVERY_MAX_MS = 5_000;
/** …and at least this far apart, however small MESH_APPLY_TIMEOUT_S is. */
export const APPLY_SWEEP_EVERY_MIN_MS = 10;
/** One sweep stops at most this many plans; any more wait for the next sweep. */
export const APPLY_SWEEP_PLANS_MAX = 100;

/** What the apply time-out needs of the mesh: the store, the bound, the serving lease, the replica's events, how far the news is heard. */
export interface ApplyTimeoutMesh {
  db: Store;
  logger: Logger;
  events: MeshEvents;
  config: { bounds: { applySeconds: number } };
  leases: Pick<Leases, 'isServing'>;
  /** The instant up to which every report is written, and the spans this replica could not hear (src/services/news/hearing.ts). */
  hearing: { current(): { writtenUntilMs: number; deaf: readonly DeafSpan[] } };
}

/**
 * The instant before which an apply must have been sent to be past its time-out at `atMs`: the one
 * from which `timeoutMs` of heard time runs up to `atMs`. Time within a span the gateway could not
 * hear (oldest first, none overlapping) is not counted, since no report could be heard then; as a
 * machine's silence is judged (machineState).
 */
export function applyCutoffMs(atMs: number, timeoutMs: number, deaf: readonly DeafSpan[]): number {
  let cursor = atMs;
  let left = timeoutMs;
  for (let i = deaf.length - 1; i >= 0; i--) {
    const span = deaf[i]!;
    if (span.fromMs >= cursor) continue;
    const heard = cursor - Math.min(span.toMs, cursor);
    if (heard >= left) return cursor - left;
    left -= heard;
    cursor = span.fromMs;
  }
  return cursor - left;
}

/** How often the sweep runs for a time-out of `applySeconds`. */
export const applySweepEveryMs = (applySeconds: number): number =>
  Math.max(APPLY_SWEEP_EVERY_MIN_MS, Math.min(APPLY_SWEEP_EVERY_MAX_MS, (applySeconds * 1000) / 4));

/**
 * Fails every apply of an OPEN plan's current tier without a report past its time-out
 * (applyCutoffMs), judged at the instant up to which reports are written, never past `now`: a
 * report stored but not yet written (a replica behind, or dead holding it) is not a missing one.
 * Such an apply fails (ok false, detail `no report within N s`; reportedAt stays null: no report
 * came) and its plan stops (STOPPED, stopReason naming the first such machine by name). The plans
 * are locked in id order, as applyReports locks them, and judged again under the lock. Answers the
 * plans stopped.
 */
export async function sweepApplyTimeouts(mesh: ApplyTimeoutMesh, now = new Date()): Promise<string[]> {
  const seconds = mesh.config.bounds.applySeconds;
  const heard = mesh.hearing.current();
  const atMs = Math.min(now.getTime(), heard.writtenUntilMs);
  const cutoff = new Date(applyCutoffMs(atMs, seconds * 1000, heard.deaf));
  const detail = `no report within ${seconds} s`;
  const stopped = await mesh.db.transaction().execute(async (tx) => {
    const due = await awaitingReport(tx).select('p.id').distinct().where('pa.sent_at', '<', cutoff).orderBy('p.id').limit(APPLY_SWEEP_PLANS_MAX).execute();
    if (due.length === 0) return [];
    const plans = await tx
      .selectFrom('plan')
      .select(['id', 'state', 'tier'])
      .where(
        'id',
        'in',
        due.map((d) => d.id),
      )
      .orderBy('id')
      .forUpdate()
      .execute();
    const ids: { id: string; tier: number; machines: string[] }[] = [];
    for (const plan of plans) {
      if (plan.state !== 'OPEN') continue;
      const failed = await tx
        .updateTable('plan_apply')
        .set({ ok: false, detail })
        .where('plan', '=', plan.id)
        .where('tier', '=', plan.tier)
        .where('reported_at', 'is', null)
        .where('ok', 'is', null)
        .where('sent_at', '<', cutoff)
        .returning('machine')
        .execute();
      if (failed.length === 0) continue;
      const machines = failed.map((f) => f.machine).sort(byName);
      await tx
        .updateTable('plan')
        .set({ state: 'STOPPED', ended_at: now, stop_reason: `machine ${machines[0]}'s apply timed out: ${detail}` })
        .where('id', '=', plan.id)
        .execute();
      ids.push({ id: plan.id, tier: plan.tier, machines });
    }
    return ids;
  });
  for (const plan of stopped) {
    mesh.logger.warn({ plan: plan.id, tier: plan.tier, machines: plan.machines, seconds }, 'applies without a report timed out: plan stopped');
    mesh.events.emit('plan-changed', plan.id);
  }
  return stopped.map((p) => p.id);
}

/**
 * Sweeps for timed-out applies every applySweepEveryMs(MESH_APPLY_TIMEOUT_S), on every replica,
 * while it holds the serving lease (one sweep at a time; a failure is logged and the next sweep
 * tries again). `stop` waits for a sweep under way.
 */
export function startApplyTimeouts(mesh: ApplyTimeoutMesh): { stop(): Promise<void> } {
  let sweeping: Promise<unknown> | undefined;
  let stopped = false;
  const timer = setInterval(() => {
    if (stopped || sweeping || !mesh.leases.isServing()) return;
    sweeping = sweepApplyTimeouts(mesh)
      .catch((err) => logJobFailure(mesh.logger, err, 'sweeping timed-out applies failed'))
      .finally(() => {
        sweeping = undefined;
      });
  }, applySweepEveryMs(mesh.config.bounds.applySeconds));
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await sweeping;
    },
  };
}

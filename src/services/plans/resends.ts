import { byName } from '../../kernel/names.js';
import { awaitingReport } from './applies.js';
import { type ApplyMessage, type RolloutMesh, sendApply } from './rollout.js';

/**
 * How long before its loss was noticed a connection may have taken applies that never left it. A
 * server that dies or restarts resets the connection, and the client notices within milliseconds
 * (3–11 ms measured, under load too); this is that with room for a replica that is slow to run.
 * A connection that dies silently is noticed only by the client's pings, minutes later: its
 * applies are left to the apply time-out and resumePlan (docs/plans.md).
 */
export const APPLY_RESEND_LOOKBACK_MS = 10_000;
/** One resend sends the applies of at most this many plans (as the time-out's sweep stops at most APPLY_SWEEP_PLANS_MAX). */
export const APPLY_RESEND_PLANS_MAX = 100;

/**
 * Publishes again, for each OPEN plan, its current tier's applies sent from `since` to before
 * `until` that await a report: one apply per plan naming only those machines. A machine that gets
 * an apply twice reports twice, and the second report changes nothing. Answers the applies sent.
 */
export async function resendAwaitedApplies(mesh: RolloutMesh, since: Date, until: Date): Promise<ApplyMessage[]> {
  const sentInWindow = awaitingReport(mesh.db).where('pa.sent_at', '>=', since).where('pa.sent_at', '<', until);
  const firstPlans = sentInWindow.select('p.id').distinct().orderBy('p.id').limit(APPLY_RESEND_PLANS_MAX);
  const rows = await sentInWindow.select(['p.id as plan', 'p.tier', 'p.build', 'pa.machine']).where('p.id', 'in', firstPlans).execute();
  const byPlan = new Map<string, ApplyMessage>();
  for (const row of rows) {
    let apply = byPlan.get(row.plan);
    if (!apply) byPlan.set(row.plan, (apply = { plan: row.plan, tier: row.tier, build: row.build, machines: [] }));
    apply.machines.push(row.machine);
  }
  const applies = [...byPlan.values()].sort((a, b) => byName(a.plan, b.plan));
  for (const apply of applies) apply.machines.sort(byName);
  for (const apply of applies) sendApply(mesh, apply);
  return applies;
}

/**
 * When after the connection comes back the awaited applies are sent again. Machines' agents come
 * back on their own schedule (nats.js and the Go client wait 2 s between attempts by default), and
 * an apply published before an agent has subscribed again reaches nobody: so once at once, and
 * again after two of their waits and more. A machine back later than the last is left to the
 * apply time-out and resumePlan.
 */
const APPLY_RESEND_AFTER_RECONNECT_MS = [0, 3_000, 15_000] as const;

/**
 * Sends again, each time this replica's NATS connection comes back, the applies that may have been
 * lost with it (at each of APPLY_RESEND_AFTER_RECONNECT_MS): those awaiting a report that were sent
 * from APPLY_RESEND_LOOKBACK_MS before the loss was noticed until it came back (a tier begun since
 * went out on a live connection). nats.js drops what is published while the connection is down (it
 * empties its buffer at each redial), and a plan whose apply never arrived would stop at its
 * time-out.
 */
export function startApplyResends(mesh: RolloutMesh): { stop(): void } {
  const statuses = mesh.bus.nc.status() as AsyncIterable<{ type: string }> & { stop?(): void };
  let lostAt: number | undefined;
  let timers: NodeJS.Timeout[] = [];
  const cancel = () => {
    for (const timer of timers) clearTimeout(timer);
    timers = [];
  };
  const resend = (since: Date, until: Date) =>
    resendAwaitedApplies(mesh, since, until).then(
      (applies) => {
        if (applies.length === 0) return;
        const machines = applies.reduce((n, a) => n + a.machines.length, 0);
        mesh.logger.warn({ plans: applies.map((a) => a.plan), machines, since, until }, 'NATS was away: applies that may have been lost sent again');
      },
      (err) => mesh.logger.warn({ err, since }, 'NATS was away, and sending its applies again failed: they are left to the apply time-out'),
    );
  (async () => {
    for await (const status of statuses) {
      if (status.type === 'disconnect') {
        // Lost again before every resend was done: the next reconnect resends from the first loss.
        cancel();
        lostAt ??= Date.now();
      } else if (status.type === 'reconnect' && lostAt !== undefined) {
        const since = new Date(lostAt - APPLY_RESEND_LOOKBACK_MS);
        const until = new Date();
        timers = APPLY_RESEND_AFTER_RECONNECT_MS.map((afterMs, i) =>
          setTimeout(() => {
            if (i === APPLY_RESEND_AFTER_RECONNECT_MS.length - 1) lostAt = undefined;
            void resend(since, until);
          }, afterMs).unref(),
        );
      }
    }
  })().catch(() => undefined);
  return {
    stop() {
      cancel();
      statuses.stop?.();
    },
  };
}

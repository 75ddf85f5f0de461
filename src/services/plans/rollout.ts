import { sql, type Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { Bus } from '../../bus/nats.js';
import type { Subjects } from '../../bus/subjects.js';
import { inSpanSync, natsSpanAttributes, SpanKind, traceHeaders } from '../../bus/trace-context.js';
import { byName } from '../../kernel/names.js';
import type { Store } from '../../store/db.js';
import type { DB } from '../../store/tables.js';
import { type Duration, recordDurations } from '../durations/durations.js';
import type { MeshEvents } from '../events.js';
import { readTiers } from './plan.js';
import { defaultTiers } from './tiers.js';

type Tx = Transaction<DB>;

/** What a rollout needs of the mesh: the store, the bus to publish applies on, and the replica's events. */
export interface RolloutMesh {
  db: Store;
  bus: Pick<Bus, 'nc'>;
  subjects: Pick<Subjects, 'planApply'>;
  logger: Logger;
  events: MeshEvents;
}

/** A machine's report on an apply, as heard on its news subject. */
export interface Report {
  machine: string;
  plan: string;
  build: string;
  ok: boolean;
  detail?: string | null;
  at: Date;
}

/** What the controller publishes on `<subjects>.plan.<id>.apply`: one tier's machines to apply a build. */
export interface ApplyMessage {
  plan: string;
  tier: number;
  build: string;
  machines: string[];
}

/** What applying a batch of reports did. */
export interface ReportsApplied {
  /** Reports that ended a machine's apply (its first report for a plan it was sent). */
  matched: number;
  /** Reports naming no plan, a plan that sent that machine nothing, another build, or a second report. */
  unmatched: number;
  durations: Duration[];
  /** Plans whose state or tier changed. */
  changed: string[];
  applies: ApplyMessage[];
  /** Plans queued behind one that became DONE, opened (their rollouts started after commit). */
  opened: string[];
}

/**
 * Opens every plan QUEUED behind `id` (OPEN, opened now), in the caller's transaction: when `id`
 * is DONE or CLOSED. Answers the plans opened, whose rollouts the caller starts after commit.
 */
export async function releaseQueuedBehind(tx: Tx, id: string): Promise<string[]> {
  const released = await tx
    .updateTable('plan')
    .set({ state: 'OPEN', opened_at: sql<Date>`now()` })
    .where('behind', '=', id)
    .where('state', '=', 'QUEUED')
    .returning('id')
    .execute();
  return released.map((r) => r.id);
}

/** What starting a tier did: the apply to publish, or none when the plan is DONE, and the plans that opened behind it then. */
export interface TierStarted {
  apply: ApplyMessage | undefined;
  opened: string[];
}

/**
 * Starts the first tier from `from` that names a machine: writes its plan_apply rows, moves the
 * plan to it and answers the apply to publish. No such tier: the plan is DONE and the plans queued
 * behind it open (their rollouts are started after commit, by `announceOpened`).
 */
export async function startTier(tx: Tx, plan: { id: string; build: string; tiers: string[][] }, from: number, now: Date): Promise<TierStarted> {
  let tier = from;
  while (tier < plan.tiers.length && plan.tiers[tier].length === 0) tier++;
  if (tier >= plan.tiers.length) {
    await tx
      .updateTable('plan')
      .set({ state: 'DONE', tier: Math.max(plan.tiers.length - 1, 0), ended_at: now })
      .where('id', '=', plan.id)
      .execute();
    return { apply: undefined, opened: await releaseQueuedBehind(tx, plan.id) };
  }
  const machines = [...new Set(plan.tiers[tier])];
  await tx
    .insertInto('plan_apply')
    .values(machines.map((machine) => ({ plan: plan.id, tier, machine, sent_at: now })))
    .onConflict((oc) => oc.columns(['plan', 'machine']).doNothing())
    .execute();
  await tx.updateTable('plan').set({ tier, tier_started_at: now }).where('id', '=', plan.id).execute();
  return { apply: { plan: plan.id, tier, build: plan.build, machines }, opened: [] };
}

/**
 * After commit: tells the replica of the plans that opened behind one that ended, and starts their
 * rollouts — the same explicit call closePlan makes.
 */
export async function announceOpened(mesh: RolloutMesh, opened: readonly string[]): Promise<void> {
  for (const id of opened) {
    mesh.events.emit('plan-changed', id);
    mesh.events.emit('plan-opened', id);
  }
  await openRollouts(mesh, opened);
}

/** Publishes one apply on `<subjects>.plan.<id>.apply`, in a producer span whose context it carries. */
export function sendApply(mesh: Pick<RolloutMesh, 'bus' | 'subjects'>, apply: ApplyMessage): void {
  const subject = mesh.subjects.planApply(apply.plan);
  inSpanSync(`plan apply ${apply.plan}`, { kind: SpanKind.PRODUCER, attributes: natsSpanAttributes(subject) }, () =>
    mesh.bus.nc.publish(subject, JSON.stringify(apply), { headers: traceHeaders() }),
  );
}

/** Publishes each apply of a tier begun; after commit. */
export function publishApplies(mesh: RolloutMesh, applies: readonly ApplyMessage[]): void {
  for (const apply of applies) {
    sendApply(mesh, apply);
    mesh.logger.info({ plan: apply.plan, tier: apply.tier, machines: apply.machines.length }, 'plan tier applied');
  }
}

/**
 * Starts an OPEN plan's rollout: fills its default tiers when it has none, writes the first tier's
 * plan_apply rows and publishes its apply. Safe to call twice and from any replica: the plan row
 * is locked, and a plan whose rollout has begun is left alone. Answers the apply sent, if any.
 */
async function openRollout(mesh: RolloutMesh, planId: string): Promise<ApplyMessage | undefined> {
  const { apply, opened, changed } = await mesh.db.transaction().execute(async (tx) => {
    const plan = await tx.selectFrom('plan').selectAll().where('id', '=', planId).forUpdate().executeTakeFirst();
    if (plan?.state !== 'OPEN' || plan.tier_started_at) return { apply: undefined, opened: [], changed: false };
    let tiers = readTiers(plan.tiers);
    if (tiers.length === 0) {
      tiers = await defaultTiers(tx, plan.seat);
      await tx
        .updateTable('plan')
        .set({ tiers: JSON.stringify(tiers) })
        .where('id', '=', plan.id)
        .execute();
    }
    const started = await startTier(tx, { id: plan.id, build: plan.build, tiers }, plan.tier ?? 0, new Date());
    return { ...started, changed: true };
  });
  if (apply) publishApplies(mesh, [apply]);
  if (changed) mesh.events.emit('plan-changed', planId);
  await announceOpened(mesh, opened);
  return apply;
}

/** Keeps the first report of each machine for each plan: a repeated report changes nothing. */
function firstReports(reports: readonly Report[]): Report[] {
  const first = new Map<string, Report>();
  for (const r of [...reports].sort((a, b) => a.at.getTime() - b.at.getTime())) {
    const key = `${r.plan}\u0000${r.machine}`;
    if (!first.has(key)) first.set(key, r);
  }
  return [...first.values()];
}

type Updated = { plan: string; machine: string; tier: number; sent_at: Date; reported_at: Date; ok: boolean; detail: string | null };

/** A plan's stopReason after a machine's failed report: `machine X reported a failed apply: <detail>` (no colon without a detail). */
const failedReportReason = (machine: string, detail: string | null): string => `machine ${machine} reported a failed apply${detail ? `: ${detail}` : ''}`;

const seconds = (from: Date, to: Date) => Math.max(0, (to.getTime() - from.getTime()) / 1000);

/**
 * Applies machines' reports in one transaction, whichever replica heard them: ends each machine's
 * apply (its first report; the apply duration), stops a plan on a failed report (STOPPED), and
 * when every machine of an open plan's tier reported ok, records the tier's duration and starts
 * the next tier, or after the last marks the plan DONE and opens the plans queued behind it. The
 * plans are locked in id order, so replicas applying reports of one plan at once take turns.
 * Applies are published, and the rollouts of plans opened started, after commit.
 */
export async function applyReports(mesh: RolloutMesh, reports: readonly Report[]): Promise<ReportsApplied> {
  const outcome: ReportsApplied = { matched: 0, unmatched: 0, durations: [], changed: [], applies: [], opened: [] };
  if (reports.length === 0) return outcome;
  const unique = firstReports(reports);
  outcome.unmatched = reports.length - unique.length;
  const planIds = [...new Set(unique.map((r) => r.plan))].sort();
  // Plans whose applies a report ended: changed for planChanged's followers even when their state is not.
  let applied: string[] = [];
  await mesh.db.transaction().execute(async (tx) => {
    outcome.durations = [];
    outcome.changed = [];
    outcome.applies = [];
    outcome.opened = [];
    const plans = await tx.selectFrom('plan').selectAll().where(sql<boolean>`id = any(${planIds}::text[])`).orderBy('id').forUpdate().execute();
    const byId = new Map(plans.map((p) => [p.id, p]));
    const matching = unique.filter((r) => byId.get(r.plan)?.build === r.build);
    let updated: Updated[] = [];
    if (matching.length) {
      // Five arrays, five parameters, whatever the batch's size: a parameter per report's field
      // (5 each) passed PostgreSQL's 65,535 at 13,108 reports and failed the batch.
      updated = (
        await sql<Updated>`
          update plan_apply pa
             set reported_at = v.at, ok = v.ok, detail = v.detail
            from unnest(${matching.map((r) => r.plan)}::text[], ${matching.map((r) => r.machine)}::text[],
                        ${matching.map((r) => r.at.toISOString())}::timestamptz[], ${matching.map((r) => r.ok)}::boolean[],
                        ${matching.map((r) => r.detail ?? null)}::text[]) as v(plan, machine, at, ok, detail)
           where pa.plan = v.plan and pa.machine = v.machine and pa.reported_at is null and pa.ok is null
       returning pa.plan, pa.machine, pa.tier, pa.sent_at, pa.reported_at, pa.ok, pa.detail`.execute(tx)
      ).rows;
    }
    outcome.matched = updated.length;
    outcome.unmatched = reports.length - updated.length;
    for (const row of updated) {
      outcome.durations.push({
        kind: 'apply',
        subject: `${row.plan}/${row.machine}`,
        seconds: seconds(new Date(row.sent_at), new Date(row.reported_at)),
        heardAt: new Date(row.reported_at),
      });
    }
    const touched = [...new Set(updated.map((r) => r.plan))].sort();
    applied = touched;
    if (touched.length) {
      const tiers = await tx
        .selectFrom('plan_apply')
        .select(['plan', 'tier'])
        .select(sql<number>`count(*) filter (where reported_at is null)::int`.as('waiting'))
        .select(sql<number>`count(*) filter (where ok = false)::int`.as('failed'))
        .select(sql<Date | null>`max(reported_at)`.as('last'))
        .where(sql<boolean>`plan = any(${touched}::text[])`)
        .groupBy(['plan', 'tier'])
        .execute();
      const now = new Date();
      for (const id of touched) {
        const plan = byId.get(id)!;
        if (plan.state !== 'OPEN') continue;
        const current = tiers.find((t) => t.plan === id && t.tier === plan.tier);
        if (!current) continue;
        if (current.failed > 0) {
          const failed = updated.filter((r) => r.plan === id && !r.ok).sort((a, b) => byName(a.machine, b.machine));
          const stopReason = failed[0] ? failedReportReason(failed[0].machine, failed[0].detail) : `tier ${plan.tier} has a failed apply`;
          await tx.updateTable('plan').set({ state: 'STOPPED', ended_at: now, stop_reason: stopReason }).where('id', '=', id).execute();
          outcome.changed.push(id);
          mesh.logger.warn({ plan: id, tier: plan.tier, failed: failed.map((r) => r.machine) }, 'a machine reported a failed apply: plan stopped');
          continue;
        }
        if (current.waiting > 0) continue;
        const finishedAt = current.last ? new Date(current.last) : now;
        if (plan.tier_started_at) {
          outcome.durations.push({
            kind: 'plan_tier',
            subject: `${id}/${plan.tier}`,
            seconds: seconds(new Date(plan.tier_started_at), finishedAt),
            heardAt: finishedAt,
          });
        }
        const { apply, opened } = await startTier(tx, { id, build: plan.build, tiers: readTiers(plan.tiers) }, plan.tier + 1, now);
        if (apply) outcome.applies.push(apply);
        outcome.opened.push(...opened);
        outcome.changed.push(id);
      }
    }
    await recordDurations(tx, outcome.durations);
  });
  publishApplies(mesh, outcome.applies);
  for (const id of new Set([...outcome.changed, ...applied])) mesh.events.emit('plan-changed', id);
  await announceOpened(mesh, outcome.opened);
  return outcome;
}

/** Starts the rollout of each plan that opened (push, or released from behind another); a failure is logged, never thrown. */
export async function openRollouts(mesh: RolloutMesh, planIds: readonly string[]): Promise<void> {
  for (const planId of planIds) {
    await openRollout(mesh, planId).catch((err) => mesh.logger.error({ err, plan: planId }, 'starting a plan rollout failed'));
  }
}

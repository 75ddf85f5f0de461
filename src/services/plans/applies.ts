import { sql } from 'kysely';
import { byName } from '../../kernel/names.js';
import type { Db } from '../../store/db.js';
import { byNameSql } from '../../store/name-order.js';
import { PLAN_MACHINES_MAX } from './plan.js';

/** What one machine was sent of a plan and what it answered: its plan_apply row. */
export interface PlanApply {
  plan: string;
  tier: number;
  machine: string;
  sentAt: Date;
  /** When its report was heard; null while none was (a timed-out apply stays null: it never reported). */
  reportedAt: Date | null;
  /** Null while waiting; false for a failed report or a time-out. */
  ok: boolean | null;
  detail: string | null;
}

/**
 * The applies awaiting a report, joined to their plan (`pa`, `p`): those of an OPEN plan's current
 * tier with neither a report nor a time-out yet. What the time-out's sweep and the resends read.
 */
export const awaitingReport = (db: Db) =>
  db
    .selectFrom('plan_apply as pa')
    .innerJoin('plan as p', 'p.id', 'pa.plan')
    .where('p.state', '=', 'OPEN')
    .whereRef('pa.tier', '=', 'p.tier')
    .where('pa.reported_at', 'is', null)
    .where('pa.ok', 'is', null);

/** A plan lists at most this many applies: one per machine, and a plan touches at most PLAN_MACHINES_MAX. */
export const PLAN_APPLIES_LISTED_MAX = PLAN_MACHINES_MAX;

/**
 * The applies of each plan asked, in the order asked (an empty list for a plan with none), each
 * plan's in tier order then machine name, at most PLAN_APPLIES_LISTED_MAX a plan. One statement
 * however many plans: what the per-request loader of `Plan.applies` calls.
 */
export async function appliesOfPlans(db: Db, planIds: readonly string[]): Promise<PlanApply[][]> {
  const byPlan = new Map<string, PlanApply[]>(planIds.map((id) => [id, []]));
  if (planIds.length === 0) return [];
  const rows = await db
    .selectFrom((eb) =>
      eb
        .selectFrom('plan_apply')
        .select(['plan', 'tier', 'machine', 'sent_at', 'reported_at', 'ok', 'detail'])
        .select(sql<number>`row_number() over (partition by plan order by tier, ${byNameSql('machine')})`.as('n'))
        .where('plan', 'in', [...planIds])
        .as('pa'),
    )
    .select(['plan', 'tier', 'machine', 'sent_at', 'reported_at', 'ok', 'detail'])
    .where('n', '<=', PLAN_APPLIES_LISTED_MAX)
    .execute();
  for (const r of rows) {
    byPlan.get(r.plan)?.push({
      plan: r.plan,
      tier: r.tier,
      machine: r.machine,
      sentAt: new Date(r.sent_at),
      reportedAt: r.reported_at === null ? null : new Date(r.reported_at),
      ok: r.ok,
      detail: r.detail,
    });
  }
  return planIds.map((id) => byPlan.get(id)!.sort((a, b) => a.tier - b.tier || byName(a.machine, b.machine)));
}

import type { Selectable } from 'kysely';
import { Invalid, NotFound } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import { checkName } from '../../kernel/names.js';
import { oneOf } from '../../kernel/values.js';
import type { Db } from '../../store/db.js';
import type { PlanTable } from '../../store/tables.js';

export const PLAN_STATES = ['QUEUED', 'OPEN', 'STOPPED', 'DONE', 'CLOSED'] as const;
export type PlanState = (typeof PLAN_STATES)[number];

/** A plan lists every machine it will touch; past this it is a mistake, not a rollout. */
export const PLAN_MACHINES_MAX = 10_000;
/** `plans` answers at most this many, newest first, so the list stays bounded as plans accumulate. */
export const PLANS_LISTED_MAX = 1000;
export const PLANS_LISTED_DEFAULT = 200;

/** A rollout of a build to the machines holding a seat, tier by tier. */
export interface Plan {
  id: string;
  seat: string;
  build: string;
  state: PlanState;
  /** The tier being applied (0-based). */
  tier: number;
  tiers: string[][];
  behind: string | null;
  createdAt: Date;
  openedAt: Date | null;
  endedAt: Date | null;
  /** Why it stopped, while STOPPED: a machine's failed report, a time-out, or stopPlan's why. */
  stopReason: string | null;
}

const date = (value: Date | string | null) => (value === null ? null : new Date(value));

export function toPlan(row: Selectable<PlanTable>): Plan {
  return {
    id: row.id,
    seat: row.seat,
    build: row.build,
    state: row.state,
    tier: row.tier,
    tiers: readTiers(row.tiers),
    behind: row.behind,
    createdAt: new Date(row.created_at),
    openedAt: date(row.opened_at),
    endedAt: date(row.ended_at),
    stopReason: row.stop_reason ?? null,
  };
}

/** Plan ids travel as a subject token (`<subjects>.plan.<id>.apply`) and sort by creation. */
export const newPlanId = (): string => `plan-${newId()}`;

/** The plan with that id; NotFound otherwise. */
export async function planById(db: Db, id: string): Promise<Plan> {
  checkName(id, 'id');
  const row = await db.selectFrom('plan').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw new NotFound('plan', id);
  return toPlan(row);
}

/** Plans newest first, of one state when given; at most `first` (default PLANS_LISTED_DEFAULT). */
export async function listPlans(db: Db, options: { state?: string | null; first?: number | null } = {}): Promise<Plan[]> {
  const first = options.first ?? PLANS_LISTED_DEFAULT;
  if (!Number.isInteger(first) || first < 0 || first > PLANS_LISTED_MAX) throw new Invalid(`first must be 0 to ${PLANS_LISTED_MAX}`, 'first');
  const state = oneOf(options.state, PLAN_STATES, 'state');
  let query = db.selectFrom('plan').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(first);
  if (state) query = query.where('state', '=', state);
  return (await query.execute()).map(toPlan);
}

/** A plan row's tiers, kept as JSON (text on PGlite, a value on PostgreSQL): one list of machine names per tier. */
export const readTiers = (value: unknown): string[][] => (typeof value === 'string' ? JSON.parse(value) : (value as string[][] | null)) ?? [];

import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { DB, PlanTable } from '../../store/tables.js';
import { newCallId } from '../calls/records.js';
import { Conflict, Invalid, NotFound } from '../../kernel/errors.js';
import type { Mesh } from '../mesh.js';
import { checkName } from '../../kernel/names.js';
import { listHoldings, seatByName } from '../seats/seats.js';

type Db = Kysely<DB> | Transaction<DB>;

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
}

const date = (value: Date | string | null) => (value === null ? null : new Date(value));

export function toPlan(row: Selectable<PlanTable>): Plan {
  return {
    id: row.id,
    seat: row.seat,
    build: row.build,
    state: row.state,
    tier: row.tier,
    tiers: typeof row.tiers === 'string' ? JSON.parse(row.tiers) : row.tiers,
    behind: row.behind,
    createdAt: new Date(row.created_at),
    openedAt: date(row.opened_at),
    endedAt: date(row.ended_at),
  };
}

/** Plan ids travel as a subject token (`<subjects>.plan.<id>.apply`) and sort by creation. */
export const newPlanId = (): string => `plan-${newCallId()}`;

/** The plan with that id; NotFound otherwise. */
export async function planById(db: Db, id: string): Promise<Plan> {
  checkName(id, 'id');
  const row = await db.selectFrom('plan').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw new NotFound('plan', id);
  return toPlan(row);
}

/** Plans newest first, of one state when given; at most `first` (default PLANS_LISTED_DEFAULT). */
export async function listPlans(db: Db, options: { state?: PlanState | null; first?: number | null } = {}): Promise<Plan[]> {
  const first = options.first ?? PLANS_LISTED_DEFAULT;
  if (!Number.isInteger(first) || first < 0 || first > PLANS_LISTED_MAX) throw new Invalid(`first must be 0 to ${PLANS_LISTED_MAX}`, 'first');
  if (options.state && !PLAN_STATES.includes(options.state)) throw new Invalid(`state must be one of ${PLAN_STATES.join(', ')}`, 'state');
  let query = db.selectFrom('plan').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(first);
  if (options.state) query = query.where('state', '=', options.state);
  return (await query.execute()).map(toPlan);
}

/**
 * The default tiers: the seat's holders (recorded, else derived) grouped one tier per site, sites
 * in name order (machines without a site last), machines in name order within each.
 */
export async function defaultTiers(db: Db, seat: string): Promise<string[][]> {
  const holdings = await listHoldings(db, { seats: [seat] });
  const bySite = new Map<string, Set<string>>();
  for (const h of holdings) {
    const site = h.site ?? '\uffff';
    if (!bySite.has(site)) bySite.set(site, new Set());
    bySite.get(site)!.add(h.machine);
  }
  return [...bySite.keys()].sort().map((site) => [...bySite.get(site)!].sort());
}

async function checkTiers(db: Db, tiers: unknown): Promise<string[][]> {
  if (!Array.isArray(tiers) || tiers.length === 0) throw new Invalid('tiers must be a non-empty list of non-empty lists of machine names', 'tiers');
  const seen = new Set<string>();
  for (const tier of tiers) {
    if (!Array.isArray(tier) || tier.length === 0) throw new Invalid('every tier must name at least one machine', 'tiers');
    for (const machine of tier) {
      checkName(machine, 'tiers');
      if (seen.has(machine)) throw new Invalid(`machine ${JSON.stringify(machine)} is in two tiers`, 'tiers');
      seen.add(machine);
    }
  }
  if (seen.size > PLAN_MACHINES_MAX) throw new Invalid(`tiers name ${seen.size} machines; at most ${PLAN_MACHINES_MAX}`, 'tiers');
  const known = await db.selectFrom('machine').select('name').where('name', 'in', [...seen]).execute();
  if (known.length < seen.size) {
    const have = new Set(known.map((k) => k.name));
    throw new NotFound('machine', [...seen].find((m) => !have.has(m))!);
  }
  return tiers as string[][];
}

export interface PushRequest {
  seat: string;
  build: string;
  behind?: string | null;
  tiers?: string[][] | null;
}

function announce(mesh: Pick<Mesh, 'events'>, changed: string[], opened: string[]) {
  for (const id of changed) mesh.events.emit('plan-changed', id);
  for (const id of opened) mesh.events.emit('plan-opened', id);
}

/**
 * Creates a plan rolling `build` out to the seat (name or alias) in tiers: those given, else one
 * per site of the seat's holders. Pushed behind a plan that is not CLOSED it waits QUEUED; else it
 * is OPEN at once. Refuses a seat without holders, an unknown machine or plan, a malformed name.
 */
export async function push(mesh: Pick<Mesh, 'db' | 'catalogue' | 'events'>, request: PushRequest): Promise<Plan> {
  checkName(request.seat, 'seat');
  checkName(request.build, 'build');
  if (request.behind != null) checkName(request.behind, 'behind');
  const plan = await mesh.db.transaction().execute(async (tx) => {
    const seat = await seatByName(tx, mesh.catalogue, request.seat);
    const tiers = request.tiers != null ? await checkTiers(tx, request.tiers) : await defaultTiers(tx, seat.name);
    if (tiers.length === 0) throw new Conflict(`seat ${JSON.stringify(seat.name)} has no holders to push ${request.build} to; give tiers`);
    let open = true;
    if (request.behind != null) {
      const ahead = await tx.selectFrom('plan').select(['id', 'state']).where('id', '=', request.behind).forUpdate().executeTakeFirst();
      if (!ahead) throw new NotFound('plan', request.behind);
      open = ahead.state === 'CLOSED';
    }
    const row = await tx
      .insertInto('plan')
      .values({
        id: newPlanId(),
        seat: seat.name,
        build: request.build,
        tiers: JSON.stringify(tiers),
        state: open ? 'OPEN' : 'QUEUED',
        behind: request.behind ?? null,
        opened_at: open ? sql<Date>`now()` : null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toPlan(row);
  });
  announce(mesh, [plan.id], plan.state === 'OPEN' ? [plan.id] : []);
  return plan;
}

/** Halts an OPEN plan (STOPPED); Conflict for a plan in any other state. */
export async function stopPlan(mesh: Pick<Mesh, 'db' | 'events'>, id: string): Promise<Plan> {
  checkName(id, 'id');
  const plan = await mesh.db.transaction().execute(async (tx) => {
    const current = await tx.selectFrom('plan').select('state').where('id', '=', id).forUpdate().executeTakeFirst();
    if (!current) throw new NotFound('plan', id);
    if (current.state !== 'OPEN') throw new Conflict(`plan ${id} is ${current.state}: only an OPEN plan can be stopped`);
    const row = await tx
      .updateTable('plan')
      .set({ state: 'STOPPED', ended_at: sql<Date>`now()` })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return toPlan(row);
  });
  announce(mesh, [plan.id], []);
  return plan;
}

/**
 * Ends a plan in any state but CLOSED (CLOSED), and opens every plan QUEUED behind it, in one
 * transaction. Conflict when it is already closed.
 */
export async function closePlan(mesh: Pick<Mesh, 'db' | 'events'>, id: string): Promise<Plan> {
  checkName(id, 'id');
  const { plan, opened } = await mesh.db.transaction().execute(async (tx) => {
    const row = await tx.selectFrom('plan').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
    if (!row) throw new NotFound('plan', id);
    if (row.state === 'CLOSED') throw new Conflict(`plan ${id} is already CLOSED`);
    const closed = await tx
      .updateTable('plan')
      .set({ state: 'CLOSED', ended_at: sql<Date>`coalesce(ended_at, now())` })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    const released = await tx
      .updateTable('plan')
      .set({ state: 'OPEN', opened_at: sql<Date>`now()` })
      .where('behind', '=', id)
      .where('state', '=', 'QUEUED')
      .returning('id')
      .execute();
    return { plan: toPlan(closed), opened: released.map((r) => r.id) };
  });
  announce(mesh, [plan.id, ...opened], opened);
  return plan;
}

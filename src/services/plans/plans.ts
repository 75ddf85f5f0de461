import { sql } from 'kysely';
import { Conflict, NotFound } from '../../kernel/errors.js';
import { checkName } from '../../kernel/names.js';
import type { Db, Store } from '../../store/db.js';
import type { MeshEvents } from '../events.js';
import type { Catalogue } from '../seats/catalogue.js';
import { lockSeat, seatByName } from '../seats/seats.js';
import { newPlanId, type Plan, toPlan } from './plan.js';
import { announceOpened, openRollouts, publishApplies, type RolloutMesh, releaseQueuedBehind, startTier } from './rollout.js';
import { checkTierHolders, checkTiers, defaultTiers } from './tiers.js';

export interface PushRequest {
  seat: string;
  build: string;
  behind?: string | null;
  tiers?: string[][] | null;
}

/** What changing plans needs of the mesh: the store, the seats' catalogue, and what a rollout needs. */
export interface PlansMesh extends RolloutMesh {
  db: Store;
  catalogue: Catalogue;
  events: MeshEvents;
}

/**
 * Run in a plan act's own transaction just before it commits, with the plan as it commits: an
 * acting verb writes its hand-act and its call's end to the outbox there (outbox/outbox.ts), so
 * the act and its record commit together, or neither does. What is sent on NATS waits for the commit.
 */
export type BeforeCommit = (tx: Db, plan: Plan) => Promise<void>;

/** No hook: a plan changed by the rollout itself, or in a test, leaves no record of its own. */
export const NOTHING_MORE: BeforeCommit = async () => undefined;

/**
 * What follows a plan act's commit (its applies sent, the replica told) cannot undo it: a failure
 * there is logged, never thrown, so the verb answers the act it did, as its record committed with
 * it says. An apply not sent is sent again by the resend (resends.ts) or the time-out.
 */
export async function afterCommit(mesh: PlansMesh, plan: string, steps: () => Promise<void>): Promise<void> {
  try {
    await steps();
  } catch (err) {
    mesh.logger.error({ err, plan }, 'a plan act committed, and what follows it failed: the act stands');
  }
}

/**
 * Tells the replica what changed, then starts the rollout of each plan that opened — an explicit
 * call, after commit: the first tier's apply is published before the verb answers. A rollout that
 * fails to start is logged by openRollouts; the plan stays OPEN for an operator to see.
 */
async function announce(mesh: PlansMesh, changed: string[], opened: string[]): Promise<void> {
  for (const id of changed) mesh.events.emit('plan-changed', id);
  for (const id of opened) mesh.events.emit('plan-opened', id);
  await openRollouts(mesh, opened);
}

/**
 * Creates a plan rolling `build` out to the seat (name or alias) in tiers: those given, else one
 * per site of the seat's holders. Pushed behind a plan not yet DONE or CLOSED it waits QUEUED; else it
 * is OPEN at once, its rollout started in the same transaction (the first tier's plan_apply rows),
 * the apply published after commit, and `plan-changed` announced once. Refuses a seat without
 * holders, an unknown machine or plan, a malformed name, a tier machine that does not hold the seat (Conflict).
 * `beforeCommit` runs in the transaction, last: the verb's records commit with the plan.
 */
export async function push(mesh: PlansMesh, request: PushRequest, beforeCommit: BeforeCommit = NOTHING_MORE): Promise<Plan> {
  checkName(request.seat, 'seat');
  checkName(request.build, 'build');
  if (request.behind != null) checkName(request.behind, 'behind');
  const { plan, apply, opened } = await mesh.db.transaction().execute(async (tx) => {
    // Locked as renameSeat and retireSeat lock it: one in flight commits first and is seen (unlocked,
    // the plan's insert failed on the seat's foreign key, an INTERNAL).
    await lockSeat(tx, request.seat);
    const seat = await seatByName(tx, mesh.catalogue, request.seat);
    let tiers: string[][];
    if (request.tiers != null) {
      tiers = await checkTiers(tx, request.tiers);
      await checkTierHolders(tx, seat.name, tiers);
    } else tiers = await defaultTiers(tx, seat.name);
    if (tiers.length === 0) throw new Conflict(`seat ${JSON.stringify(seat.name)} has no holders to push ${request.build} to; give tiers`);
    let open = true;
    if (request.behind != null) {
      const ahead = await tx.selectFrom('plan').select(['id', 'state']).where('id', '=', request.behind).forUpdate().executeTakeFirst();
      if (!ahead) throw new NotFound('plan', request.behind);
      open = ahead.state === 'DONE' || ahead.state === 'CLOSED';
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
    if (!open) {
      const queued = toPlan(row);
      await beforeCommit(tx, queued);
      return { plan: queued, apply: undefined, opened: [] };
    }
    const started = await startTier(tx, { id: row.id, build: row.build, tiers }, 0, new Date());
    const current = toPlan(await tx.selectFrom('plan').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow());
    await beforeCommit(tx, current);
    return { plan: current, ...started };
  });
  await afterCommit(mesh, plan.id, async () => {
    if (apply) publishApplies(mesh, [apply]);
    mesh.events.emit('plan-changed', plan.id);
    if (plan.state !== 'QUEUED') mesh.events.emit('plan-opened', plan.id);
    // A plan whose every tier is empty is DONE at once: what it released opens (none yet, behind a new plan).
    await announceOpened(mesh, opened);
  });
  return plan;
}

/** Halts an OPEN plan (STOPPED), keeping `why` as its stopReason; Conflict for a plan in any other state. */
export async function stopPlan(mesh: PlansMesh, id: string, why: string, beforeCommit: BeforeCommit = NOTHING_MORE): Promise<Plan> {
  checkName(id, 'id');
  const plan = await mesh.db.transaction().execute(async (tx) => {
    const current = await tx.selectFrom('plan').select('state').where('id', '=', id).forUpdate().executeTakeFirst();
    if (!current) throw new NotFound('plan', id);
    if (current.state !== 'OPEN') throw new Conflict(`plan ${id} is ${current.state}: only an OPEN plan can be stopped`);
    const row = await tx
      .updateTable('plan')
      .set({ state: 'STOPPED', ended_at: sql<Date>`now()`, stop_reason: why })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    const stopped = toPlan(row);
    await beforeCommit(tx, stopped);
    return stopped;
  });
  await afterCommit(mesh, plan.id, () => announce(mesh, [plan.id], []));
  return plan;
}

/**
 * Ends a plan in any state but CLOSED (CLOSED), and opens every plan QUEUED behind it, in one
 * transaction. Conflict when it is already closed.
 */
export async function closePlan(mesh: PlansMesh, id: string, beforeCommit: BeforeCommit = NOTHING_MORE): Promise<Plan> {
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
    const opened = await releaseQueuedBehind(tx, id);
    const plan = toPlan(closed);
    await beforeCommit(tx, plan);
    return { plan, opened };
  });
  await afterCommit(mesh, plan.id, () => announce(mesh, [plan.id, ...opened], opened));
  return plan;
}

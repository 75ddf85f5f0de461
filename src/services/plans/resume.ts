import { sql } from 'kysely';
import { Conflict, NotFound } from '../../kernel/errors.js';
import { byName, checkName } from '../../kernel/names.js';
import { type Plan, readTiers, toPlan } from './plan.js';
import { afterCommit, type BeforeCommit, NOTHING_MORE, type PlansMesh } from './plans.js';
import { type ApplyMessage, announceOpened, openRollouts, publishApplies, startTier } from './rollout.js';

/**
 * Resumes a STOPPED plan (Conflict in any other state): in one transaction, the stopped tier's
 * failed machines (a failed report or a time-out) are sent the apply again — their plan_apply rows
 * reset, sent now, reported/ok/detail cleared — and the plan is OPEN again, its stopReason cleared.
 * A tier with nothing to retry and nothing waiting (stopped by hand after every machine reported
 * ok) starts the next tier at once. After commit the apply names only the machines retried; a
 * plan stopped before its rollout began starts it. `beforeCommit` runs in the transaction, last
 * (the verb's hand-act and call's end: plans.ts BeforeCommit).
 */
export async function resumePlan(mesh: PlansMesh, id: string, beforeCommit: BeforeCommit = NOTHING_MORE): Promise<Plan> {
  checkName(id, 'id');
  const { plan, apply, opened, begin } = await mesh.db.transaction().execute(async (tx) => {
    const row = await tx.selectFrom('plan').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
    if (!row) throw new NotFound('plan', id);
    if (row.state !== 'STOPPED') throw new Conflict(`plan ${id} is ${row.state}: only a STOPPED plan can be resumed`);
    await tx.updateTable('plan').set({ state: 'OPEN', stop_reason: null, ended_at: null }).where('id', '=', id).execute();
    const now = new Date();
    let apply: ApplyMessage | undefined;
    let opened: string[] = [];
    if (row.tier_started_at) {
      const retried = await tx
        .updateTable('plan_apply')
        .set({ sent_at: now, reported_at: null, ok: null, detail: null })
        .where('plan', '=', id)
        .where('tier', '=', row.tier)
        .where('ok', '=', false)
        .returning('machine')
        .execute();
      if (retried.length) {
        apply = { plan: id, tier: row.tier, build: row.build, machines: retried.map((r) => r.machine).sort(byName) };
      } else {
        const { waiting } = await tx
          .selectFrom('plan_apply')
          .select(sql<number>`count(*) filter (where ok is null)::int`.as('waiting'))
          .where('plan', '=', id)
          .where('tier', '=', row.tier)
          .executeTakeFirstOrThrow();
        if (waiting === 0) ({ apply, opened } = await startTier(tx, { id, build: row.build, tiers: readTiers(row.tiers) }, row.tier + 1, now));
      }
    }
    const plan = toPlan(await tx.selectFrom('plan').selectAll().where('id', '=', id).executeTakeFirstOrThrow());
    await beforeCommit(tx, plan);
    return { plan, apply, opened, begin: !row.tier_started_at };
  });
  await afterCommit(mesh, id, async () => {
    if (apply) publishApplies(mesh, [apply]);
    mesh.events.emit('plan-changed', id);
    if (begin) await openRollouts(mesh, [id]);
    await announceOpened(mesh, opened);
  });
  return plan;
}

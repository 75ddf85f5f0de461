import type { Db } from '../../store/db.js';
import { type HandActLog, leaveHandAct } from '../hand-acts/hand-acts.js';
import type { ActOutbox } from '../hand-acts/outbox-write.js';
import { actingVerb, readingVerb, type VerbCall } from '../verbs/verb.js';
import { listPlans, type Plan } from './plan.js';
import { type BeforeCommit, closePlan, type PlansMesh, push, stopPlan } from './plans.js';
import { resumePlan } from './resume.js';

type ActingPlansMesh = PlansMesh & HandActLog;

/**
 * A plan's act commits in its own transaction, then announces and sends applies: its hand-act and
 * its call's end are written in that transaction, just before it commits (recordedWithin).
 */
const SENDS_AFTER_COMMIT = { commitsItsOwnAct: true } as const;

/**
 * The hook a plan verb gives its service (plans.ts BeforeCommit): in the plan's own transaction, its
 * hand-act and its call's end (the plan as it commits) go to the outbox, so a replica killed after
 * the commit leaves the act with its record, and a record that cannot be written undoes the act.
 */
function recordedWithin(
  mesh: ActingPlansMesh,
  acting: { why: string; cause?: string | null; condition?: string | null },
  call: VerbCall,
  act: string,
  target: (plan: Plan) => string,
): BeforeCommit {
  return async (tx, plan) => {
    // Outside the dispatcher (no outbox given) the hand-act still goes to the outbox: the relay puts it.
    const outbox: ActOutbox = { ...(mesh.outbox ?? { ids: [] }), tx };
    await leaveHandAct({ ...mesh, outbox }, acting, call, act, target(plan));
    await outbox.endCall?.(tx, plan);
  };
}

/** Plans a build's rollout to a seat's holders; its first tier is applied before it answers. */
export const pushVerb = actingVerb(
  'push',
  'act',
  { seat: { type: 'String', required: true }, build: { type: 'String', required: true }, behind: { type: 'ID' }, tiers: { type: '[[String]]' } },
  (mesh: ActingPlansMesh, args, call) =>
    push(
      mesh,
      args,
      recordedWithin(mesh, args, call, 'push', (plan) => `${plan.id} (${plan.build} to ${plan.seat})`),
    ),
  SENDS_AFTER_COMMIT,
);

/** Halts an OPEN plan; its why is the plan's stopReason. */
export const stopPlanVerb = actingVerb(
  'stopPlan',
  'act',
  { id: { type: 'ID', required: true } },
  (mesh: ActingPlansMesh, args, call) =>
    stopPlan(
      mesh,
      args.id,
      args.why,
      recordedWithin(mesh, args, call, 'stopPlan', (plan) => plan.id),
    ),
  SENDS_AFTER_COMMIT,
);

/** Sends a STOPPED plan's failed machines the apply again and opens it; its rollout goes on. */
export const resumePlanVerb = actingVerb(
  'resumePlan',
  'act',
  { id: { type: 'ID', required: true } },
  (mesh: ActingPlansMesh, args, call) =>
    resumePlan(
      mesh,
      args.id,
      recordedWithin(mesh, args, call, 'resumePlan', (plan) => plan.id),
    ),
  SENDS_AFTER_COMMIT,
);

/** Ends a plan in any state; plans queued behind it open. */
export const closePlanVerb = actingVerb(
  'closePlan',
  'act',
  { id: { type: 'ID', required: true } },
  (mesh: ActingPlansMesh, args, call) =>
    closePlan(
      mesh,
      args.id,
      recordedWithin(mesh, args, call, 'closePlan', (plan) => plan.id),
    ),
  SENDS_AFTER_COMMIT,
);

/** Plans newest first, of one state when given. */
export const plansVerb = readingVerb('plans', 'read', { state: { type: 'String' }, first: { type: 'Int' } }, (mesh: { db: Db }, args) =>
  listPlans(mesh.db, args),
);

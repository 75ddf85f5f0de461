import { actingVerb, readingVerb } from '../calls/verb.js';
import { type HandActLog, leaveHandAct } from '../hand-acts/hand-acts.js';
import type { Db } from '../seats/seats.js';
import { listPlans } from './plan.js';
import { closePlan, type PlansMesh, push, stopPlan } from './plans.js';
import { resumePlan } from './resume.js';

type ActingPlansMesh = PlansMesh & HandActLog;

/** A plan's act commits, then announces and sends applies: its hand-act is written just after it (calls/verb.ts). */
const SENDS_AFTER_COMMIT = { commitsItsOwnAct: true } as const;

/** Plans a build's rollout to a seat's holders; its first tier is applied before it answers. */
export const pushVerb = actingVerb(
  'push',
  'act',
  { seat: { type: 'String', required: true }, build: { type: 'String', required: true }, behind: { type: 'ID' }, tiers: { type: '[[String]]' } },
  async (mesh: ActingPlansMesh, args, call) => {
    const plan = await push(mesh, args);
    await leaveHandAct(mesh, args, call, 'push', `${plan.id} (${plan.build} to ${plan.seat})`);
    return plan;
  },
  SENDS_AFTER_COMMIT,
);

/** Halts an OPEN plan; its why is the plan's stopReason. */
export const stopPlanVerb = actingVerb(
  'stopPlan',
  'act',
  { id: { type: 'ID', required: true } },
  async (mesh: ActingPlansMesh, args, call) => {
    const plan = await stopPlan(mesh, args.id, args.why);
    await leaveHandAct(mesh, args, call, 'stopPlan', plan.id);
    return plan;
  },
  SENDS_AFTER_COMMIT,
);

/** Sends a STOPPED plan's failed machines the apply again and opens it; its rollout goes on. */
export const resumePlanVerb = actingVerb(
  'resumePlan',
  'act',
  { id: { type: 'ID', required: true } },
  async (mesh: ActingPlansMesh, args, call) => {
    const plan = await resumePlan(mesh, args.id);
    await leaveHandAct(mesh, args, call, 'resumePlan', plan.id);
    return plan;
  },
  SENDS_AFTER_COMMIT,
);

/** Ends a plan in any state; plans queued behind it open. */
export const closePlanVerb = actingVerb(
  'closePlan',
  'act',
  { id: { type: 'ID', required: true } },
  async (mesh: ActingPlansMesh, args, call) => {
    const plan = await closePlan(mesh, args.id);
    await leaveHandAct(mesh, args, call, 'closePlan', plan.id);
    return plan;
  },
  SENDS_AFTER_COMMIT,
);

/** Plans newest first, of one state when given. */
export const plansVerb = readingVerb('plans', 'read', { state: { type: 'String' }, first: { type: 'Int' } }, (mesh: { db: Db }, args) =>
  listPlans(mesh.db, args),
);

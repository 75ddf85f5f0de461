import { builder } from '../schema/builder.js';
import { PlanRef, PlanStateEnum } from '../schema/plan.js';
import { listPlans, PLANS_LISTED_DEFAULT, PLANS_LISTED_MAX } from '../services/plans/plan.js';
import { closePlanVerb, pushVerb, resumePlanVerb, stopPlanVerb } from '../services/plans/verbs.js';
import { verbMutation } from './verb-mutation.js';

builder.queryFields((t) => ({
  plans: t.field({
    type: [PlanRef],
    description: `Plans newest first, of one state when given; the first ${PLANS_LISTED_DEFAULT} unless asked (at most ${PLANS_LISTED_MAX}).`,
    args: { state: t.arg({ type: PlanStateEnum }), first: t.arg.int() },
    resolve: (_root, args, ctx) => listPlans(ctx.mesh.db, args),
  }),
}));

builder.mutationFields((t) => ({
  push: t.field({
    type: PlanRef,
    description:
      "Plans a build's rollout to a seat's holders: in the tiers given, else one tier per site in name order. Behind a plan not yet DONE or CLOSED it waits QUEUED.",
    ...verbMutation(t, pushVerb),
  }),
  stopPlan: t.field({
    type: PlanRef,
    description: 'Halts an OPEN plan (STOPPED).',
    ...verbMutation(t, stopPlanVerb),
  }),
  resumePlan: t.field({
    type: PlanRef,
    description:
      "Resumes a STOPPED plan: its stopped tier's failed machines are sent the apply again, the plan is OPEN again (stopReason cleared) and its rollout goes on.",
    ...verbMutation(t, resumePlanVerb),
  }),
  closePlan: t.field({
    type: PlanRef,
    description: 'Ends a plan in any state (CLOSED); plans QUEUED behind it open.',
    ...verbMutation(t, closePlanVerb),
  }),
}));

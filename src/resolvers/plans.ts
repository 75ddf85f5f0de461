import { builder } from '../schema/builder.js';
import { PlanRef, PlanStateEnum } from '../schema/plan.js';
import { listPlans, PLANS_LISTED_DEFAULT, PLANS_LISTED_MAX, type Plan } from '../services/plans.js';
import { runVerb, verbArgs } from './verb-args.js';

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
      "Plans a build's rollout to a seat's holders: in the tiers given, else one tier per site in name order. Behind a plan not yet CLOSED it waits QUEUED.",
    authScopes: { act: true },
    errors: {},
    args: verbArgs(t.arg, 'push'),
    resolve: (_root, args, ctx) => runVerb<Plan>(ctx, 'push', args),
  }),
  stopPlan: t.field({
    type: PlanRef,
    description: 'Halts an OPEN plan (STOPPED).',
    authScopes: { act: true },
    errors: {},
    args: verbArgs(t.arg, 'stopPlan'),
    resolve: (_root, args, ctx) => runVerb<Plan>(ctx, 'stopPlan', args),
  }),
  closePlan: t.field({
    type: PlanRef,
    description: 'Ends a plan in any state (CLOSED); plans QUEUED behind it open.',
    authScopes: { act: true },
    errors: {},
    args: verbArgs(t.arg, 'closePlan'),
    resolve: (_root, args, ctx) => runVerb<Plan>(ctx, 'closePlan', args),
  }),
}));

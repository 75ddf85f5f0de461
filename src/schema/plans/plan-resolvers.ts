import { listPlans, PLANS_LISTED_DEFAULT, PLANS_LISTED_MAX } from '../../services/plans/plan.js';
import { closePlanVerb, pushVerb, resumePlanVerb, stopPlanVerb } from '../../services/plans/verbs.js';
import { builder } from '../support/builder.js';
import { followed, followedItem } from '../support/live-follow.js';
import { verbMutation } from '../support/verb-mutation.js';
import { PlanRef, PlanStateEnum } from './plan.js';

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

builder.subscriptionFields((t) => ({
  planChanged: t.field({
    type: PlanRef,
    description:
      'A plan each time its state, tier or applies change, whichever replica changed it: the plan `id` (first as it is now, so a subscriber that comes late or back misses no state), or every plan from now when no `id`. NOT_FOUND for an unknown id. A subscriber that lets 1,000 wait unsent is sent the error SLOW_SUBSCRIBER and completed.',
    args: { id: t.arg.id({ description: 'The plan to follow; absent: every plan.' }) },
    subscribe: async (_root, args, ctx) => followed(await ctx.mesh.planChanges.follow(args.id == null ? null : String(args.id)), ctx, () => undefined),
    resolve: (value, _args, ctx) => {
      const plan = followedItem(value);
      // One context serves the whole subscription: each change reads its applies afresh.
      ctx.loaders.appliesByPlan.clear(plan.id);
      return plan;
    },
  }),
}));

import { PLAN_APPLIES_LISTED_MAX, type PlanApply } from '../../services/plans/applies.js';
import { listPlans, PLAN_STATES, PLANS_LISTED_DEFAULT, PLANS_LISTED_MAX, type Plan } from '../../services/plans/plan.js';
import { closePlanVerb, pushVerb, resumePlanVerb, stopPlanVerb } from '../../services/plans/verbs.js';
import { builder } from '../support/builder.js';
import { followed, followedItem } from '../support/live-follow.js';
import { verbMutation } from '../support/verb-mutation.js';

const PlanStateEnum = builder.enumType('PlanState', {
  description:
    'QUEUED behind another plan until it is DONE or closed; OPEN rolling out; STOPPED by hand, a failed report or a time-out, until resumed or closed; DONE after its last tier; CLOSED.',
  values: PLAN_STATES,
});

const PlanApplyRef = builder.objectRef<PlanApply>('PlanApply').implement({
  description: 'What one machine was sent of a plan, and what it answered.',
  fields: (t) => ({
    tier: t.exposeInt('tier', { description: 'The tier it was sent in, from 0.' }),
    machine: t.exposeString('machine'),
    sentAt: t.field({ type: 'DateTime', description: 'When the apply was sent (again, after resumePlan).', resolve: (a) => a.sentAt }),
    reportedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When its report was heard; null while none was, and for an apply that timed out.',
      resolve: (a) => a.reportedAt,
    }),
    ok: t.exposeBoolean('ok', { nullable: true, description: 'Null while waiting; false for a failed report or a time-out.' }),
    detail: t.exposeString('detail', { nullable: true, description: "The machine's detail, or `no report within N s` for a time-out." }),
  }),
});

const PlanRef = builder.objectRef<Plan>('Plan').implement({
  description: 'A rollout of a build to the machines holding a seat, tier by tier.',
  fields: (t) => ({
    id: t.exposeID('id'),
    seat: t.exposeString('seat'),
    build: t.exposeString('build'),
    state: t.field({ type: PlanStateEnum, resolve: (p) => p.state }),
    tier: t.exposeInt('tier', { description: 'The tier being applied, from 0.' }),
    tiers: t.field({ type: t.listRef(t.listRef('String')), description: 'Machine names, one list per tier.', resolve: (p) => p.tiers }),
    behind: t.exposeID('behind', { nullable: true, description: 'The plan this one waits for.' }),
    createdAt: t.field({ type: 'DateTime', resolve: (p) => p.createdAt }),
    openedAt: t.field({ type: 'DateTime', nullable: true, resolve: (p) => p.openedAt }),
    endedAt: t.field({ type: 'DateTime', nullable: true, resolve: (p) => p.endedAt }),
    stopReason: t.exposeString('stopReason', {
      nullable: true,
      description: 'Why it stopped, while STOPPED: `machine X reported a failed apply: <detail>`, a time-out, or the why given to stopPlan.',
    }),
    applies: t.field({
      type: [PlanApplyRef],
      description: `Each machine sent this plan's apply, in tier order then by name (at most ${PLAN_APPLIES_LISTED_MAX}).`,
      resolve: (p, _args, ctx) => ctx.loaders.appliesByPlan.load(p.id),
    }),
  }),
});

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

import { PLAN_APPLIES_LISTED_MAX, type PlanApply } from '../../services/plans/applies.js';
import { PLAN_STATES, type Plan } from '../../services/plans/plan.js';
import { builder } from '../support/builder.js';

export const PlanStateEnum = builder.enumType('PlanState', {
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

export const PlanRef = builder.objectRef<Plan>('Plan').implement({
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

import { PLAN_STATES, type Plan } from '../services/plans/plan.js';
import { builder } from './builder.js';

export const PlanStateEnum = builder.enumType('PlanState', {
  description: 'QUEUED behind another plan until it is closed; OPEN rolling out; STOPPED by hand or a failed report; DONE after its last tier; CLOSED.',
  values: PLAN_STATES,
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
  }),
});

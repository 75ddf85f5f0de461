import { idPageOf } from '../../kernel/pages.js';
import { followHandActs, HAND_ACTS_PAGE_DEFAULT, type HandAct, listHandActs, type RepeatedCause, repeatedCauses } from '../../services/hand-acts/hand-acts.js';
import { recordHandActVerb } from '../../services/hand-acts/verbs.js';
import { builder } from '../support/builder.js';
import { resumeCursor } from '../support/live.js';
import { followed, followedItem } from '../support/live-follow.js';
import { servicePage } from '../support/pages.js';
import { verbMutation } from '../support/verb-mutation.js';

const HandActRef = builder.objectRef<HandAct>('HandAct').implement({
  description: 'An act on the mesh with its why: every acting verb leaves one, and recordHandAct records a repair done by hand.',
  fields: (t) => ({
    id: t.exposeID('id'),
    at: t.field({ type: 'DateTime', resolve: (a) => a.at }),
    actor: t.exposeString('actor', { description: 'Who did it: the caller of the verb.' }),
    act: t.exposeString('act'),
    target: t.exposeString('target', { nullable: true }),
    why: t.exposeString('why'),
    cause: t.exposeString('cause', { nullable: true, description: 'What made it necessary; repeatedCauses groups by it.' }),
    condition: t.exposeString('condition', { nullable: true, description: 'The state of the mesh that was seen.' }),
    callId: t.exposeID('callId', { nullable: true, description: 'The call that did it, when done through a verb.' }),
  }),
});

const RepeatedCauseRef = builder.objectRef<RepeatedCause>('RepeatedCause').implement({
  description: 'A cause given to more than one hand-act in a window: a repair that keeps coming back.',
  fields: (t) => ({
    cause: t.exposeString('cause'),
    count: t.exposeInt('count'),
    firstAt: t.field({ type: 'DateTime', resolve: (c) => c.firstAt }),
    lastAt: t.field({ type: 'DateTime', resolve: (c) => c.lastAt }),
  }),
});

builder.queryFields((t) => ({
  handActs: t.connection(
    {
      type: HandActRef,
      description: 'The hand-act log, newest first, from `since` and of exactly one `cause`, `actor`, `act` and `target` when given.',
      args: { since: t.arg({ type: 'DateTime' }), cause: t.arg.string(), actor: t.arg.string(), act: t.arg.string(), target: t.arg.string() },
      resolve: (_root, args, ctx) =>
        servicePage(
          args,
          (act: HandAct) => act.id,
          HAND_ACTS_PAGE_DEFAULT,
          (page) =>
            listHandActs(
              ctx.mesh,
              { since: args.since, cause: args.cause, actor: args.actor, act: args.act, target: args.target },
              idPageOf(page, 'hand-acts'),
            ),
        ),
    },
    { name: 'HandActConnection', description: 'A page of hand-acts, newest first.' },
    { name: 'HandActEdge' },
  ),
  repeatedCauses: t.field({
    type: [RepeatedCauseRef],
    description: 'Causes given to more than one hand-act since `since` (default: the last seven days), most frequent first.',
    args: { since: t.arg({ type: 'DateTime' }) },
    resolve: (_root, { since }, ctx) => repeatedCauses(ctx.mesh, since ?? undefined),
  }),
}));

builder.mutationFields((t) => ({
  recordHandAct: t.field({
    type: HandActRef,
    description: 'Records a repair done by hand outside the mesh, so it leaves a trace with its why.',
    ...verbMutation(t, recordHandActVerb),
  }),
}));

builder.subscriptionFields((t) => ({
  handActAdded: t.field({
    type: HandActRef,
    description:
      'Each hand-act as it is recorded, on any replica. `after` (a `HandActConnection` cursor, i.e. a hand-act id; over SSE also `Last-Event-ID`) first sends the hand-acts kept that were recorded after it, oldest first; without it, only new ones. A subscriber that lets 1,000 wait unsent is sent the error SLOW_SUBSCRIBER (its `resumeAfter` the id of the last one sent) and completed: subscribe again with that `after` and nothing kept is missed.',
    args: { after: t.arg.string({ description: 'The id of the last hand-act this subscriber has (a `HandActConnection` cursor).' }) },
    subscribe: (_root, args, ctx) => {
      const after = resumeCursor(ctx, args.after);
      return followed(followHandActs(ctx.mesh, after), ctx, (act) => act.id, after);
    },
    resolve: (value) => followedItem(value),
  }),
}));

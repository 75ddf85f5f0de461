import { idPageOf } from '../../kernel/pages.js';
import { followCalls } from '../../services/calls/follow.js';
import { CALLS_PAGE_DEFAULT, CALLS_PAGE_MAX, type Call, callById, listCalls } from '../../services/calls/records.js';
import { callVerbVerb } from '../../services/calls/verbs.js';
import { builder } from '../support/builder.js';
import { followed, followedItem, resumeCursor } from '../support/live-follow.js';
import { servicePage } from '../support/pages.js';
import { verbMutation } from '../support/verb-mutation.js';
import { CallRef, CallStateEnum } from './call.js';

builder.queryFields((t) => ({
  call: t.field({
    type: CallRef,
    nullable: true,
    description: 'The call with that id, across restarts of any replica. An id not kept (never made, or pushed out) is a NOT_FOUND error.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => callById(ctx.mesh, String(id)),
  }),
  calls: t.connection(
    {
      type: CallRef,
      description: `Calls newest first, ${CALLS_PAGE_DEFAULT} a page unless asked (at most ${CALLS_PAGE_MAX}), filtered by seat (a name or an alias: its calls under any of its names), verb, state and caller.`,
      args: { seat: t.arg.string(), verb: t.arg.string(), state: t.arg({ type: CallStateEnum }), caller: t.arg.string() },
      resolve: (_root, args, ctx) =>
        servicePage(
          args,
          (call: Call) => call.id,
          CALLS_PAGE_DEFAULT,
          (page) => listCalls(ctx.mesh, args, idPageOf(page, 'calls')),
        ),
    },
    { name: 'CallConnection', description: 'A page of calls, newest first.' },
    { name: 'CallEdge' },
  ),
}));

builder.mutationFields((t) => ({
  callVerb: t.field({
    type: CallRef,
    description:
      "Calls any seat's verb on `<subjects>.seat.<seat>.<verb>` after judging the arguments against the seat's row; waits timeoutMs (default 10 000, at most 60 000). Answers the call, OK or FAILED (time-out, no responders, the seat's error).",
    ...verbMutation(t, callVerbVerb),
  }),
}));

builder.subscriptionFields((t) => ({
  callChanged: t.field({
    type: CallRef,
    description:
      'Each call as it starts and as it ends, on any replica: of one seat (a name or an alias: its calls under any of its names) and in one state when given. Each carries `cursor`; `after` (over SSE also `Last-Event-ID`) first sends every call kept whose last change came after that cursor, oldest change first, as it is now. A subscriber that lets 1,000 wait unsent is sent the error SLOW_SUBSCRIBER (its `resumeAfter` the cursor of the last one sent) and completed.',
    args: {
      seat: t.arg.string({ description: "A seat's name or alias." }),
      state: t.arg({ type: CallStateEnum }),
      after: t.arg.string({ description: 'The `cursor` of the last call change this subscriber has.' }),
    },
    subscribe: async (_root, args, ctx) => {
      const after = resumeCursor(ctx, args.after);
      const queue = await followCalls(ctx.mesh, { seat: args.seat, state: args.state, after });
      return followed(queue, ctx, (call) => String(call.revision), after);
    },
    resolve: (value) => followedItem(value),
  }),
}));

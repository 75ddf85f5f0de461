import { idPageOf } from '../../kernel/pages.js';
import { followCalls } from '../../services/calls/follow.js';
import { callById, listCalls } from '../../services/calls/reading.js';
import { CALL_STATES, CALLS_PAGE_DEFAULT, CALLS_PAGE_MAX, type Call } from '../../services/calls/records.js';
import { callVerbVerb } from '../../services/calls/verbs.js';
import { CALL_DOORS } from '../../services/verbs/verb.js';
import { builder } from '../support/builder.js';
import { resumeCursor } from '../support/live.js';
import { followed, followedItem } from '../support/live-follow.js';
import { servicePage } from '../support/pages.js';
import { verbMutation } from '../support/verb-mutation.js';

const CallStateEnum = builder.enumType('CallState', {
  description: 'RUNNING until the work ends OK or FAILED; ABANDONED when the replica running it stopped first.',
  values: CALL_STATES,
});

const CallDoorEnum = builder.enumType('CallDoor', {
  description: 'How the call came in: a GraphQL mutation or a NATS request to `<subjects>.seat.<seat>.<verb>`.',
  values: CALL_DOORS,
});

function parsed(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

const CallRef = builder.objectRef<Call>('Call').implement({
  description: 'One verb invocation, kept in the calls bucket (the last 1000, at most 14 days), whichever door it came through.',
  fields: (t) => ({
    id: t.exposeID('id'),
    seat: t.exposeString('seat', { description: 'The seat called, by its canonical name.' }),
    verb: t.exposeString('verb'),
    args: t.field({
      type: 'JSON',
      nullable: true,
      description: 'The arguments; cut to 64 KiB of JSON text when longer (see argsTruncated).',
      resolve: (c) => c.args,
    }),
    argsTruncated: t.exposeBoolean('argsTruncated'),
    caller: t.exposeString('caller', {
      description: "A GraphQL token's name, or on NATS the user in the subject (`<subjects>.seat.<controller>.<verb>.<user>`), else `unnamed`.",
    }),
    door: t.field({ type: CallDoorEnum, resolve: (c) => c.door }),
    state: t.field({ type: CallStateEnum, resolve: (c) => c.state }),
    startedAt: t.field({ type: 'DateTime', resolve: (c) => c.startedAt }),
    endedAt: t.field({ type: 'DateTime', nullable: true, resolve: (c) => c.endedAt }),
    answer: t.exposeString('answer', { nullable: true, description: 'The answer as JSON text, cut at 64 KiB when longer.' }),
    answerJson: t.field({
      type: 'JSON',
      nullable: true,
      description: 'The answer parsed, when it was kept whole.',
      resolve: (c) => (c.answerTruncated ? null : parsed(c.answer)),
    }),
    answerTruncated: t.exposeBoolean('answerTruncated'),
    answerBytes: t.exposeInt('answerBytes', { nullable: true, description: "The full answer's size in bytes, even when cut." }),
    error: t.string({ nullable: true, description: 'Why it failed or was abandoned.', resolve: (c) => c.error?.message ?? null }),
    errorCode: t.string({
      nullable: true,
      description: 'TIMEOUT, NO_RESPONDERS, INVALID, NOT_FOUND, ABANDONED, or the seat’s own code.',
      resolve: (c) => c.error?.code ?? null,
    }),
    replica: t.exposeString('replica', { description: 'The replica that ran it.' }),
    cursor: t.string({
      nullable: true,
      description: 'Where `callChanged(after:)` resumes after this change (its revision in the calls bucket); null outside callChanged.',
      resolve: (c) => {
        const revision = (c as { revision?: number }).revision;
        return typeof revision === 'number' ? String(revision) : null;
      },
    }),
    outerCallId: t.id({
      nullable: true,
      description: 'The call that forwarded this one here: a callVerb to the controller’s own seat, whose caller this call keeps.',
      resolve: (call) => call.outerCallId ?? null,
    }),
  }),
});

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

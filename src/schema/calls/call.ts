import { CALL_STATES, type Call } from '../../services/calls/records.js';
import { CALL_DOORS } from '../../services/verbs/verb.js';
import { builder } from '../support/builder.js';

export const CallStateEnum = builder.enumType('CallState', {
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

export const CallRef = builder.objectRef<Call>('Call').implement({
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

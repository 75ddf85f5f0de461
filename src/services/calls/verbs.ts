import { readingVerb } from '../verbs/verb.js';
import { type ForwardMesh, forwardCall } from './forward.js';
import { callById, listCalls } from './reading.js';
import { CALLS_PAGE_DEFAULT, type CallsMesh } from './records.js';

/**
 * Forwards a call to any seat's verb. It records its own call, under the seat it calls, so the
 * dispatcher records none; it needs the act scope over GraphQL although it changes nothing itself.
 */
export const callVerbVerb = readingVerb(
  'callVerb',
  'act',
  { seat: { type: 'String', required: true }, verb: { type: 'String', required: true }, args: { type: 'JSON' }, timeoutMs: { type: 'Int' } },
  (mesh: ForwardMesh, args, call) =>
    forwardCall(mesh, {
      seat: args.seat,
      verb: args.verb,
      args: args.args,
      timeoutMs: args.timeoutMs,
      caller: call.caller,
      scopes: call.scopes,
      door: call.door,
    }),
  { recordsItsOwnCall: true },
);

/** One call by id, across restarts of any replica. */
export const callByIdVerb = readingVerb('call', 'read', { id: { type: 'ID', required: true } }, (mesh: CallsMesh, args) => callById(mesh, args.id), {
  showsOthersCalls: true,
});

/** A page of calls, newest first, as the NATS door answers it: `{calls, hasNextPage}`. */
export const callsVerb = readingVerb(
  'calls',
  'read',
  {
    first: { type: 'Int' },
    after: { type: 'String' },
    seat: { type: 'String' },
    verb: { type: 'String' },
    state: { type: 'String' },
    caller: { type: 'String' },
  },
  async (mesh: ForwardMesh, args) => {
    const first = args.first ?? CALLS_PAGE_DEFAULT;
    const page = await listCalls(mesh, args, { after: args.after, limit: first + 1 });
    return { calls: page.slice(0, first), hasNextPage: page.length > first };
  },
  { showsOthersCalls: true },
);

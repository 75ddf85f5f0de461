import { instant } from '../../kernel/values.js';
import { actingVerb, readingVerb } from '../verbs/verb.js';
import { HAND_ACTS_PAGE_DEFAULT, type HandActLog, leaveHandAct, listHandActs, repeatedCauses } from './hand-acts.js';

/** Records a repair done by hand outside the mesh, so it leaves a trace with its why. */
export const recordHandActVerb = actingVerb(
  'recordHandAct',
  'act',
  { act: { type: 'String', required: true }, target: { type: 'String' } },
  (mesh: HandActLog, args, call) => leaveHandAct(mesh, args, call, args.act, args.target ?? null),
);

/** A page of the hand-act log, newest first, as the NATS door answers it: `{handActs, hasNextPage}`. */
export const handActsVerb = readingVerb(
  'handActs',
  'read',
  {
    first: { type: 'Int' },
    after: { type: 'String' },
    since: { type: 'DateTime' },
    cause: { type: 'String' },
    actor: { type: 'String' },
    act: { type: 'String' },
    target: { type: 'String' },
  },
  async (mesh: HandActLog, args) => {
    const first = args.first ?? HAND_ACTS_PAGE_DEFAULT;
    const filter = { since: instant(args.since, 'since'), cause: args.cause, actor: args.actor, act: args.act, target: args.target };
    const page = listHandActs(mesh, filter, { after: args.after, limit: first + 1 });
    return { handActs: page.slice(0, first), hasNextPage: page.length > first };
  },
);

/** Causes given to more than one hand-act since an instant (default: the last seven days). */
export const repeatedCausesVerb = readingVerb('repeatedCauses', 'read', { since: { type: 'DateTime' } }, async (mesh: HandActLog, args) =>
  repeatedCauses(mesh, instant(args.since, 'since')),
);

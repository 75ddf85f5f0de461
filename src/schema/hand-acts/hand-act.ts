import type { HandAct, RepeatedCause } from '../../services/hand-acts/hand-acts.js';
import { builder } from '../support/builder.js';

export const HandActRef = builder.objectRef<HandAct>('HandAct').implement({
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

export const RepeatedCauseRef = builder.objectRef<RepeatedCause>('RepeatedCause').implement({
  description: 'A cause given to more than one hand-act in a window: a repair that keeps coming back.',
  fields: (t) => ({
    cause: t.exposeString('cause'),
    count: t.exposeInt('count'),
    firstAt: t.field({ type: 'DateTime', resolve: (c) => c.firstAt }),
    lastAt: t.field({ type: 'DateTime', resolve: (c) => c.lastAt }),
  }),
});

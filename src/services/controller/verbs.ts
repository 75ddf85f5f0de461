import type { ArgType, Verb, VerbArg } from '../seats/protocol.js';

const arg = (name: string, type: ArgType, required = false): VerbArg => ({ name, type, required });

/** What every acting verb takes besides its own arguments: the hand-act it leaves. */
export const ACTING_ARGS: VerbArg[] = [arg('why', 'String', true), arg('cause', 'String'), arg('condition', 'String')];

const acting = (name: string, args: VerbArg[]): Verb => ({ name, acting: true, args: [...args, ...ACTING_ARGS] });
const reading = (name: string, args: VerbArg[] = []): Verb => ({ name, acting: false, args });

/**
 * The controller's own verbs, defined once: its seat row is seeded from this table, the GraphQL
 * mutations take their arguments from it and the NATS responder on `<subjects>.seat.<controller>.*`
 * judges requests against it. A verb's name is its GraphQL field's name.
 */
export const CONTROLLER_VERBS: Verb[] = [
  acting('push', [arg('seat', 'String', true), arg('build', 'String', true), arg('behind', 'ID'), arg('tiers', '[[String]]')]),
  acting('stopPlan', [arg('id', 'ID', true)]),
  acting('closePlan', [arg('id', 'ID', true)]),
  acting('resetConsumer', [arg('stream', 'String', true), arg('consumer', 'String', true), arg('startSeq', 'Int'), arg('startTime', 'DateTime')]),
  acting('recordHandAct', [arg('act', 'String', true), arg('target', 'String')]),
  reading('callVerb', [arg('seat', 'String', true), arg('verb', 'String', true), arg('args', 'JSON'), arg('timeoutMs', 'Int')]),
  reading('call', [arg('id', 'ID', true)]),
  reading('calls', [arg('first', 'Int'), arg('after', 'String'), arg('seat', 'String'), arg('state', 'String'), arg('caller', 'String')]),
  reading('handActs', [arg('first', 'Int'), arg('after', 'String'), arg('since', 'DateTime'), arg('cause', 'String')]),
  reading('repeatedCauses', [arg('since', 'DateTime')]),
  reading('plans', [arg('state', 'String'), arg('first', 'Int')]),
  reading('status'),
  reading('durations', [arg('kind', 'String'), arg('since', 'DateTime')]),
];

/** The controller's verb of that name, or undefined. */
export const controllerVerb = (name: string): Verb | undefined => CONTROLLER_VERBS.find((v) => v.name === name);

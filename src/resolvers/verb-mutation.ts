import type { GatewayContext } from '../schema/context.js';
import { builder } from '../schema/builder.js';
import { invokeControllerVerb } from '../services/controller/invoke.js';
import type { VerbArg } from '../services/seats/protocol.js';
import { controllerVerb } from '../services/controller/verbs.js';

type MutationFieldBuilder = Parameters<Parameters<typeof builder.mutationFields>[0]>[0];
type ArgBuilder = MutationFieldBuilder['arg'];

const DESCRIPTIONS: Record<string, string> = {
  why: 'Why this is done, in a sentence: required, never blank. It is kept in the hand-act log.',
  cause: 'What made it necessary, as a short label; repeatedCauses groups hand-acts by it.',
  condition: 'The state of the mesh that was seen when acting.',
};

function argFor(arg: ArgBuilder, spec: VerbArg) {
  const options = { required: spec.required, description: DESCRIPTIONS[spec.name] };
  switch (spec.type) {
    case 'String':
      return arg.string(options);
    case 'ID':
      return arg.id(options);
    case 'Int':
      return arg.int(options);
    case 'Float':
      return arg.float(options);
    case 'Boolean':
      return arg.boolean(options);
    case 'JSON':
      return arg({ type: 'JSON', ...options });
    case 'DateTime':
      return arg({ type: 'DateTime', ...options });
    case '[String]':
      return arg.stringList(options);
    case '[[String]]':
      return arg({ type: arg.listRef(arg.listRef('String')), ...options });
  }
}

/** A mutation's arguments, read from the controller's verb table: the one definition of each verb. */
function verbArgs(arg: ArgBuilder, verb: string) {
  const spec = controllerVerb(verb);
  if (!spec) throw new Error(`${verb} is not in CONTROLLER_VERBS`);
  return Object.fromEntries(spec.args.map((a) => [a.name, argFor(arg, a)])) as Record<string, ReturnType<typeof argFor>>;
}

/** Runs a controller verb through the GraphQL door: recorded as a call by the caller's token name. */
async function runVerb<T>(ctx: GatewayContext, verb: string, args: Record<string, unknown>): Promise<T> {
  const { result } = await invokeControllerVerb<T>(ctx.mesh, { verb, args, caller: ctx.caller.name, door: 'GRAPHQL' });
  return result;
}

/**
 * What every controller verb's mutation shares, spread into its field beside its type and
 * description: arguments from the verb table, the `act` scope, typed errors as data, and the call
 * recorded by `runVerb`. The answer is whatever the verb's handler returns, the field's type.
 */
export function verbMutation(t: MutationFieldBuilder, verb: string) {
  return {
    authScopes: { act: true },
    errors: {},
    args: verbArgs(t.arg, verb),
    resolve: (_root: unknown, args: Record<string, unknown>, ctx: GatewayContext) => runVerb<never>(ctx, verb, args),
  };
}

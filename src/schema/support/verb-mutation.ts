import { invokeVerb } from '../../services/controller/invoke.js';
import type { Mesh } from '../../services/mesh.js';
import type { ArgSpec, ArgSpecs, ControllerVerb } from '../../services/verbs/verb.js';
import type { builder } from './builder.js';
import type { GatewayContext } from './context.js';

type MutationFieldBuilder = Parameters<Parameters<typeof builder.mutationFields>[0]>[0];
type ArgBuilder = MutationFieldBuilder['arg'];

function argFor(arg: ArgBuilder, spec: ArgSpec) {
  const options = { required: spec.required ?? false, description: spec.description };
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

/**
 * What every controller verb's mutation shares, spread into its field beside its type and
 * description: the GraphQL arguments from the verb's declaration, the scope the verb declares
 * (refused here as data, and again by the dispatcher, which every door goes through), typed errors
 * as data, and the call recorded by the one dispatcher. The answer is the verb handler's result.
 */
export function verbMutation<A extends ArgSpecs, R>(t: MutationFieldBuilder, verb: ControllerVerb<Mesh, A, R>) {
  const args = Object.fromEntries(Object.entries(verb.args as ArgSpecs).map(([name, spec]) => [name, argFor(t.arg, spec)])) as Record<
    string,
    ReturnType<typeof argFor>
  >;
  return {
    authScopes: { [verb.scope]: true },
    errors: {},
    args,
    resolve: async (_root: unknown, given: Record<string, unknown>, ctx: GatewayContext): Promise<R> =>
      (await invokeVerb(ctx.mesh, verb, { args: given, caller: ctx.caller.name, scopes: ctx.caller.scopes, door: 'GRAPHQL' })).result,
  };
}

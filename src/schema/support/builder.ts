import SchemaBuilder from '@pothos/core';
import ErrorsPlugin from '@pothos/plugin-errors';
import RelayPlugin from '@pothos/plugin-relay';
import ScopeAuthPlugin, { type AuthFailure, AuthScopeFailureType } from '@pothos/plugin-scope-auth';
import { GraphQLError, GraphQLScalarType, Kind, type ValueNode } from 'graphql';
import { Conflict, Forbidden, Invalid, NotFound } from '../../kernel/errors.js';
import { INSTANT_EARLIEST, INSTANT_LATEST, instantFault, JSON_DEPTH_MAX, jsonTooDeep } from '../../kernel/values.js';
import { scopeRefusal } from '../../services/verbs/verb.js';
import type { GatewayContext } from './context.js';

export interface SchemaTypes {
  Context: GatewayContext;
  AuthScopes: { read: boolean; act: boolean; admin: boolean };
  Scalars: {
    DateTime: { Input: Date; Output: Date | string };
    JSON: { Input: unknown; Output: unknown };
    ID: { Input: string; Output: string | number };
  };
  DefaultFieldNullability: false;
}

/** The scope a refusal of scope-auth names: the field's one scope, found inside an any/all failure. */
function missingScope(failure: AuthFailure): string | undefined {
  if (failure.kind === AuthScopeFailureType.AuthScope) return failure.scope;
  if (failure.kind === AuthScopeFailureType.AnyAuthScopes || failure.kind === AuthScopeFailureType.AllAuthScopes) {
    return failure.failures.length === 1 ? missingScope(failure.failures[0]!) : undefined;
  }
  return undefined;
}

export const builder = new SchemaBuilder<SchemaTypes>({
  // Errors first so that a refusal by scope-auth comes back as a ForbiddenError as data.
  plugins: [ErrorsPlugin, ScopeAuthPlugin, RelayPlugin],
  defaultFieldNullability: false,
  scopeAuth: {
    // A subscription is refused when it is made, not later at each event: one without `read` holds nothing open.
    authorizeOnSubscribe: true,
    authScopes: (ctx) => ({
      read: ctx.caller.scopes.has('read'),
      act: ctx.caller.scopes.has('act'),
      admin: ctx.caller.scopes.has('admin'),
    }),
    // Names the scope missing, in the words invokeVerb uses on every door.
    unauthorizedError: (_parent, ctx, info, result) => {
      const scope = missingScope(result.failure);
      if (info.parentType.name === 'Mutation' && scope) return scopeRefusal(ctx.caller.name, info.fieldName, scope);
      return new Forbidden(
        `${ctx.caller.name} may not ${info.parentType.name === 'Mutation' ? 'run' : 'read'} ${info.fieldName}${scope ? `: it needs the ${scope} scope` : ''}`,
      );
    },
  },
  errors: { defaultTypes: [NotFound, Conflict, Invalid, Forbidden] },
  relay: { clientMutationId: 'omit', cursorType: 'String' },
});

const invalid = (message: string) => new GraphQLError(message, { extensions: { code: 'INVALID' } });

function parseDateTime(value: unknown): Date {
  const date = typeof value === 'string' ? new Date(value) : undefined;
  if (!date || Number.isNaN(date.getTime())) throw invalid(`DateTime must be an ISO 8601 string, got ${JSON.stringify(value)?.slice(0, 60)}`);
  const fault = instantFault(date);
  if (fault) throw invalid(`DateTime ${fault}, got ${JSON.stringify(value).slice(0, 60)}`);
  return date;
}

function parseJson(value: unknown): unknown {
  if (jsonTooDeep(value)) throw invalid(`JSON nests more than ${JSON_DEPTH_MAX} deep`);
  return value;
}

builder.addScalarType(
  'DateTime',
  new GraphQLScalarType({
    name: 'DateTime',
    description: `An instant, as an ISO 8601 string in UTC, from ${INSTANT_EARLIEST.toISOString()} to ${INSTANT_LATEST.toISOString()}.`,
    serialize: (value) => (value instanceof Date ? value.toISOString() : new Date(value as string).toISOString()),
    parseValue: parseDateTime,
    parseLiteral: (ast) => parseDateTime(ast.kind === Kind.STRING ? ast.value : undefined),
  }),
);

function literal(ast: ValueNode, variables?: Record<string, unknown> | null): unknown {
  switch (ast.kind) {
    case Kind.STRING:
    case Kind.BOOLEAN:
      return ast.value;
    case Kind.INT:
    case Kind.FLOAT:
      return Number(ast.value);
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return ast.values.map((v) => literal(v, variables));
    case Kind.OBJECT:
      return Object.fromEntries(ast.fields.map((f) => [f.name.value, literal(f.value, variables)]));
    case Kind.VARIABLE:
      return variables?.[ast.name.value];
    default:
      throw new GraphQLError(`JSON cannot hold ${ast.kind}`);
  }
}

builder.addScalarType(
  'JSON',
  new GraphQLScalarType({
    name: 'JSON',
    description: `Any JSON value, nested at most ${JSON_DEPTH_MAX} deep.`,
    serialize: (value) => value,
    parseValue: parseJson,
    parseLiteral: (ast, variables) => parseJson(literal(ast, variables)),
  }),
);

builder.queryType({ authScopes: { read: true } });
builder.mutationType({});
builder.subscriptionType({ authScopes: { read: true } });

import { GraphQLError } from 'graphql';
import { variablesRefusal } from '../document-guard.js';
import { atHttp, type Guard } from './guard.js';
import { type Refusal, refused } from './refusal.js';

const NO_OPERATION = 'connection_init carries no operation';

/** A GraphQLError of a judged parameter as the refusal of `guard`, its status and code kept. */
function fromGraphQLError(guard: string, error: GraphQLError): Refusal {
  const http = error.extensions.http as { status?: number } | undefined;
  return refused(guard, http?.status ?? 400, String(error.extensions.code ?? 'BAD_REQUEST'), error.message);
}

/**
 * An operation's variables nested past JSON_DEPTH_MAX or holding a NUL are refused 400 INVALID,
 * as soon as they are read: before any plugin keys them (the status query cache) or they run.
 */
export const paramsGuard: Guard = {
  name: 'params',
  stage: 'operation',
  at: atHttp({ connect: NO_OPERATION, subscribe: true }),
  judge({ params }) {
    const refusal = params === undefined ? undefined : variablesRefusal(params.variables);
    return refusal && fromGraphQLError('params', refusal);
  },
};

/**
 * A hash must name a manifest document (PERSISTED_QUERY_NOT_FOUND); with MESH_PERSISTED_ONLY a
 * raw document must be a manifest's (PERSISTED_QUERY_ONLY), judged before it is parsed.
 */
export const persistedGuard: Guard = {
  name: 'persisted',
  stage: 'operation',
  at: atHttp({ connect: NO_OPERATION, subscribe: true }),
  judge({ params }, { persisted }) {
    if (params === undefined) return undefined;
    try {
      persisted.documentFor(params);
      return undefined;
    } catch (error) {
      if (error instanceof GraphQLError) return fromGraphQLError('persisted', error);
      throw error;
    }
  },
};

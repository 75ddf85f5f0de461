import { type ExecutionArgs, GraphQLError, getOperationAST, getVariableValues } from 'graphql';
import type { SubscribePayload, Context as WsContext } from 'graphql-ws';
import type { YogaServerInstance } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { type Fanout, type Group, markLiveContext, type PreparedOperation } from '../../fanout/engine.js';
import { operationKey } from '../../fanout/operation-key.js';
import type { GatewayContext } from '../../schema/support/context.js';
import type { Caller } from '../../services/access/caller.js';
import type { Guards } from '../guards/index.js';
import { asOperationError } from '../guards/refusal.js';
import type { PersistedOperations } from '../persisted.js';
import type { Roots, SocketRecords, WsExtra } from './socket.js';

export interface SubscriptionRoom {
  yoga: YogaServerInstance<Record<string, unknown>, GatewayContext>;
  logger: Logger;
  /** Serves the live status subscriptions; without it every subscription is executed per subscriber. */
  fanout?: Fanout;
  guards: Guards;
  /** A hash names a manifest document (the persisted guard judged it): its document is the one run. */
  persisted: PersistedOperations;
  records: SocketRecords;
}

/** A thrown parse or validation failure as this operation's error: a GraphQLError as it is, anything else logged and named plainly. */
function refusal(error: unknown, logger: Logger): GraphQLError {
  if (error instanceof GraphQLError) {
    // `http` says how Yoga answers over HTTP; a socket has no status to set.
    const { http: _status, ...extensions } = error.extensions;
    return _status === undefined ? error : new GraphQLError(error.message, { nodes: error.nodes, extensions });
  }
  logger.error({ err: error }, 'validating a graphql-ws operation failed');
  return new GraphQLError('the operation could not be parsed or validated', { extensions: { code: 'INTERNAL' } });
}

/**
 * graphql-ws' onSubscribe: each operation meets the guards' request and operation stages (an
 * error message for that id, the socket goes on), then goes through Yoga's envelop (auth,
 * context, limits, masking); a subscription of a live status field joins the fan-out's group for
 * its operation and caller instead of being executed for this subscriber alone.
 */
export function onSubscribeOf({ yoga, logger, fanout, guards, persisted, records }: SubscriptionRoom) {
  return async (ctx: WsContext<Record<string, unknown>, WsExtra>, id: string, payload: SubscribePayload) => {
    const caller = ctx.extra.caller as Caller;
    // This operation is among them already (graphql-ws notes its id before asking).
    const operationsOnSocket = Object.keys(ctx.subscriptions).length;
    // The request stage (operations on the socket, the rate) and the operation stage (variables, persisted), as an HTTP request meets them.
    const refused = guards.judgeAll(['request', 'operation'], { door: 'graphql-ws subscribe', caller, operationsOnSocket, params: payload });
    // The socket's access line counts every operation it ran or was refused, but one past the socket's cap.
    if (refused?.guard !== 'operations') records.logs.get(ctx.extra.socket)?.operation(payload);
    if (refused) return [asOperationError(refused)];
    let params = payload;
    try {
      const query = persisted.documentFor(payload);
      if (query !== undefined && query !== payload.query) params = { ...payload, query };
    } catch (error) {
      return [refusal(error, logger)];
    }
    const socket = ctx.extra.socket;
    const key = fanout ? operationKey(caller, params) : undefined;
    const existing = key === undefined ? undefined : fanout?.group(key);
    if (existing) return joinArgs(existing, socket, id, params.operationName);

    const { schema, execute, subscribe, contextFactory, parse, validate } = yoga.getEnveloped({
      ...ctx,
      req: ctx.extra.request,
      socket,
      params,
      caller,
    });
    // A bad document is this operation's `error` message, never the socket's close: its other
    // subscriptions go on. graphql-armor's limits throw from validate rather than report.
    let document;
    try {
      document = parse(params.query);
      const errors = validate(schema, document);
      if (errors.length) return errors;
    } catch (error) {
      return [refusal(error, logger)];
    }

    const field = fanout?.liveField(document, params.operationName, params.variables);
    if (fanout && key !== undefined && field) {
      // Variables are judged once here: a group's executions must not each fail on them.
      const definitions = getOperationAST(document, params.operationName)?.variableDefinitions ?? [];
      const coerced = getVariableValues(schema, definitions, params.variables ?? {});
      if (coerced.errors) return coerced.errors;
      // A group outlives the subscriber that made it: its context holds no socket or request.
      const shared = yoga.getEnveloped({ params, caller });
      const operation: PreparedOperation = {
        execute: shared.execute as PreparedOperation['execute'],
        args: {
          schema: shared.schema,
          document,
          contextValue: markLiveContext(await shared.contextFactory()),
          variableValues: params.variables,
          operationName: params.operationName,
        },
      };
      return joinArgs(fanout.open(key, field, operation), socket, id, params.operationName);
    }
    return {
      schema,
      operationName: params.operationName,
      document,
      variableValues: params.variables,
      contextValue: await contextFactory(),
      rootValue: { execute, subscribe } satisfies Roots,
    };
  };
}

// graphql-ws subscribes with these arguments; the subscriber joins its group then.
function joinArgs(group: Group, socket: WebSocket, id: string, operationName?: string | null): ExecutionArgs {
  const roots: Roots = {
    execute: () => {
      throw new Error('a live field is a subscription');
    },
    subscribe: () => group.join(socket, id),
  };
  return { schema: group.schema, document: group.document, operationName, rootValue: roots };
}

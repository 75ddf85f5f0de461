import type { IncomingMessage } from 'node:http';
import { type ExecutionArgs, GraphQLError, getOperationAST, getVariableValues } from 'graphql';
import { CloseCode, handleProtocols, makeServer, type Context as WsContext } from 'graphql-ws';
import type { YogaServerInstance } from 'graphql-yoga';
import type { Logger } from 'pino';
import { WebSocket, type WebSocketServer } from 'ws';
import { type Fanout, type Group, markLiveContext, type PreparedOperation } from '../fanout/engine.js';
import { operationKey } from '../fanout/operation-key.js';
import type { GatewayContext } from '../schema/support/context.js';
import type { Caller } from '../services/access/caller.js';
import type { Access } from '../services/access/tokens.js';
import { type AccessLog, requestIdOf } from './access-log.js';
import { callerOrNothing } from './guards/caller.js';
import type { Guards } from './guards/index.js';
import { asOperationError, CLOSE_REASON_MAX_BYTES, closeReasonOf, cutToCloseReason, type Refusal } from './guards/refusal.js';
import type { LiveDoors } from './live-doors.js';
import type { PersistedOperations } from './persisted.js';

/** How often each socket is pinged; one that has not answered the previous ping by then is ended. */
const KEEP_ALIVE_MS = 12_000;

type WsExtra = {
  socket: WebSocket;
  request: IncomingMessage;
  caller?: Caller;
  /** The Authorization of its connection_init, judged again whenever the tokens file is re-read. */
  authorization?: string;
};

export interface GraphqlWsOptions {
  wss: WebSocketServer;
  yoga: YogaServerInstance<Record<string, unknown>, GatewayContext>;
  access: Access;
  logger: Logger;
  /** Serves the live status subscriptions; without it every subscription is executed per subscriber. */
  fanout?: Fanout;
  keepAliveMs?: number;
  /** One line per connection as it closes. */
  accessLog?: AccessLog;
  /** The counts, expiry and revocation every live door keeps, shared with the HTTP streams (liveAuth). */
  doors: LiveDoors;
  /** The gateway's guards: connection_init meets the caller and live stages, each operation the request and operation stages. */
  guards: Guards;
  /** A hash names a manifest document (the persisted guard judged it): its document is the one run. */
  persisted: PersistedOperations;
}

/** Closes `socket` with `code` and `reason` cut to CLOSE_REASON_MAX_BYTES (a caller's name may be 200 characters): never throws. */
function closeSocket(socket: WebSocket, code?: number, reason = ''): void {
  try {
    socket.close(code, cutToCloseReason(reason));
  } catch {
    socket.terminate();
  }
}

/** Closes `socket` as a refusal of the guards says: 4403 `Forbidden: <why>`, or 4429 over a cap. */
const closeRefused = (socket: WebSocket, refusal: Refusal): void => closeSocket(socket, refusal.closeCode, closeReasonOf(refusal));

type Roots = { execute(args: ExecutionArgs): unknown; subscribe(args: ExecutionArgs): unknown };

const reasonOf = (error: unknown) => {
  const reason = error instanceof Error ? error.message : String(error);
  return Buffer.byteLength(reason) <= CLOSE_REASON_MAX_BYTES ? reason : 'Internal server error';
};

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

/** The message types of graphql-ws' protocol a client may send; graphql-ws throws (a 4500) on a server's own `next`, `error` or `connection_ack`. */
const CLIENT_MESSAGE_TYPES: ReadonlySet<string> = new Set(['connection_init', 'ping', 'pong', 'subscribe', 'complete']);

/** A message's `type`, read only after graphql-ws refused it (never on the path of a good message). */
function messageTypeOf(text: string): string | undefined {
  try {
    const type = (JSON.parse(text) as { type?: unknown } | null)?.type;
    return typeof type === 'string' ? type : undefined;
  } catch {
    return undefined;
  }
}

const isClientMessageType = (text: string) => CLIENT_MESSAGE_TYPES.has(messageTypeOf(text) ?? '');

/**
 * graphql-ws (its `makeServer`, on sockets of `ws`) at the Yoga endpoint. `connection_init` must
 * carry a token the access file knows (refused: close 4403). Every operation goes through Yoga's
 * envelop (auth, context, limits, masking); a subscription of a live status field joins the
 * fanout's group for its operation and caller instead of being executed for this subscriber alone.
 */
export function serveGraphqlWs({ wss, yoga, access, logger, fanout, doors, guards, persisted, accessLog, keepAliveMs = KEEP_ALIVE_MS }: GraphqlWsOptions): {
  dispose(): Promise<void>;
} {
  /** Each socket's release from the live doors' counts, once acknowledged. */
  const entered = new WeakMap<WebSocket, () => void>();
  /** Each socket's access-log line in the making, and the request id its upgrade was answered with. */
  const socketLogs = new WeakMap<WebSocket, ReturnType<AccessLog['socket']>>();
  const upgradeIds = new WeakMap<IncomingMessage, string>();
  wss.on('headers', (headers, request) => {
    const id = requestIdOf(request);
    upgradeIds.set(request, id);
    headers.push(`x-request-id: ${id}`);
  });
  const server = makeServer<Record<string, unknown>, WsExtra>({
    execute: (args) => (args.rootValue as Roots).execute(args) as never,
    subscribe: (args) => (args.rootValue as Roots).subscribe(args) as never,
    onConnect: async (ctx: WsContext<Record<string, unknown>, WsExtra>) => {
      const authorization = ctx.connectionParams?.Authorization ?? ctx.connectionParams?.authorization;
      const presented = typeof authorization === 'string' ? authorization : undefined;
      let admission: string | undefined;
      try {
        admission = await access.admit(presented);
      } catch (error) {
        admission = error instanceof Error ? error.message : String(error);
      }
      // Closed while its token was verified: its close has run, so it must not be counted now.
      if (ctx.extra.socket.readyState !== WebSocket.OPEN) return false;
      const door = 'graphql-ws connect';
      // 4403, graphql-ws's Forbidden, with the reason (a JWT's: signature, issuer, audience or expiry).
      const refusedCaller = guards.judge('caller', { door, authorization: presented, admission });
      const caller = refusedCaller ? undefined : callerOrNothing(access, presented);
      const refusal = refusedCaller ?? (caller && guards.judge('live', { door, caller }));
      if (refusal || !caller) {
        if (refusal?.guard === 'caps') logger.info({ caller: caller?.name }, `WebSocket refused: ${refusal.message}`);
        closeRefused(
          ctx.extra.socket,
          refusal ?? { guard: 'caller', message: 'the token names no caller', code: 'FORBIDDEN', status: 401, closeCode: CloseCode.Forbidden },
        );
        return false;
      }
      ctx.extra.caller = caller;
      ctx.extra.authorization = presented;
      socketLogs.get(ctx.extra.socket)?.caller(caller.name);
      const socket = ctx.extra.socket;
      // Closed 4403 the instant a JWT expires, or when the token is revoked or loses scopes; a fresh token resumes on a new socket.
      entered.set(
        socket,
        doors.enter({
          kind: 'WebSocket',
          caller,
          authorization: presented,
          expiresAt: access.expiresAt(presented),
          end: (reason) => closeSocket(socket, CloseCode.Forbidden, reason),
          renewed: (next) => {
            ctx.extra.caller = next;
          },
        }),
      );
      return true;
    },
    onSubscribe: async (ctx, id, payload) => {
      const caller = ctx.extra.caller as Caller;
      socketLogs.get(ctx.extra.socket)?.operation(payload);
      // This operation is among them already (graphql-ws notes its id before asking).
      const operationsOnSocket = Object.keys(ctx.subscriptions).length;
      // The request stage (operations on the socket, the rate) and the operation stage (variables, persisted), as an HTTP request meets them.
      const refused = guards.judgeAll(['request', 'operation'], { door: 'graphql-ws subscribe', caller, operationsOnSocket, params: payload });
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
    },
  });

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

  wss.options.handleProtocols = handleProtocols;
  const alive = new WeakSet<WebSocket>();

  wss.on('connection', (socket, request) => {
    if (accessLog) {
      const line = accessLog.socket(request, upgradeIds.get(request) ?? requestIdOf(request));
      socketLogs.set(socket, line);
      socket.once('close', (code) => line.closed(code));
    }
    const address = request.socket.remoteAddress ?? 'unknown';
    const full = guards.judge('live', { door: 'graphql-ws connect', address });
    if (full) {
      logger.info({ address }, `WebSocket refused: ${full.message}`);
      closeRefused(socket, full);
      return;
    }
    const leaveAddress = doors.enterAddress(address);
    socket.once('close', () => {
      leaveAddress();
      entered.get(socket)?.();
    });
    alive.add(socket);
    socket.on('pong', () => alive.add(socket));
    // `on`, not `once`: a second error with no listener would be thrown out of the socket.
    socket.on('error', (error) => {
      logger.warn({ err: error }, 'a WebSocket failed');
      closeSocket(socket, CloseCode.InternalServerError, reasonOf(error));
    });
    const closed = server.opened(
      {
        protocol: socket.protocol,
        send: (data) =>
          new Promise<void>((resolve, reject) => {
            if (socket.readyState !== WebSocket.OPEN) return resolve();
            socket.send(data, (err) => (err ? reject(err) : resolve()));
          }),
        close: (code, reason) => closeSocket(socket, code, reason),
        onMessage: (cb) =>
          socket.on('message', async (data) => {
            const text = String(data);
            try {
              await cb(text);
            } catch (error) {
              if (!isClientMessageType(text)) {
                logger.warn({ type: messageTypeOf(text)?.slice(0, 100) }, 'a graphql-ws client sent a message type only a server sends: closed 4400');
                return closeSocket(socket, CloseCode.BadRequest, 'a client may send connection_init, ping, pong, subscribe and complete only');
              }
              logger.error({ err: error }, 'handling a graphql-ws message failed');
              closeSocket(socket, CloseCode.InternalServerError, reasonOf(error));
            }
          }),
      },
      { socket, request },
    );
    socket.once('close', (code, reason) => {
      void closed(code, String(reason));
    });
  });

  // One timer for every socket rather than one per socket: idle subscribers stay small.
  const keepAlive = setInterval(() => {
    for (const socket of wss.clients) {
      if (socket.readyState !== WebSocket.OPEN) continue;
      if (!alive.has(socket)) {
        socket.terminate();
        continue;
      }
      alive.delete(socket);
      socket.ping();
    }
  }, keepAliveMs);
  keepAlive.unref();

  return {
    async dispose() {
      clearInterval(keepAlive);
      fanout?.close();
      for (const client of wss.clients) client.close(1001, 'the gateway is stopping');
    },
  };
}

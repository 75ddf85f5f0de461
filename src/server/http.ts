import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { type FieldNode, GraphQLError, type GraphQLSchema, type ValidationContext } from 'graphql';
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { Fanout, liveExecutionPlugin } from '../fanout/engine.js';
import { sseIdsPlugin } from '../fanout/sse-ids.js';
import { LIVE_STATUS_FIELDS, STATUS_QUERY_FIELDS } from '../fanout/status-fields.js';
import { type StatusQueryCache, statusQueryCache } from '../fanout/status-query-cache.js';
import { DomainError, isStoreUnavailable, STORE_UNAVAILABLE_MESSAGE } from '../kernel/errors.js';
import { createLoaders } from '../schema/loaders.js';
import type { GatewayContext } from '../schema/support/context.js';
import type { Caller } from '../services/access/caller.js';
import type { Access } from '../services/access/tokens.js';
import type { Mesh } from '../services/mesh.js';
import { accessLog } from './access-log.js';
import { useCompiledExecution } from './compiled-execution.js';
import { dashboardFiles } from './dashboard.js';
import { useDocumentNestingLimit, useNulRefusal } from './document-guard.js';
import { GRAPHIQL_DEFAULT_QUERY, offlineGraphiQL } from './graphiql.js';
import { serveGraphqlWs } from './graphql-ws.js';
import { callerOrNothing, judgeCaller } from './guards/caller.js';
import { httpDoorOf } from './guards/guard.js';
import { type Guards, guardsOf } from './guards/index.js';
import { answerRefusal } from './guards/refusal.js';
import { useGuards } from './guards/yoga.js';
import { meshHealth } from './health.js';
import { listenForServerErrors, noteEscaped } from './last-resort.js';
import { asksForStream, type LiveStreams, liveDoors, liveStreams } from './live-doors.js';
import { createMetrics, type MetricSources, type Metrics } from './metrics.js';
import { operationMetrics } from './operation-metrics.js';
import { loadPersistedOperations, usePersistedOperations } from './persisted.js';
import { useQueryCost } from './query-cost.js';
import { OperationRate } from './rate-limit.js';
import { createDrain, type Drain } from './ready.js';
import { useRequestBodyLimit } from './request-body-limit.js';
import { statusFastPath } from './status-fast-path.js';
import { useOperationTracing } from './tracing.js';

/** Limits on what one operation may ask, so no query however deep or wide takes the process down. */
export const QUERY_LIMITS = { depth: 12, aliases: 30, tokens: 5_000, cost: 50_000, directives: 50 };

export interface ServerOptions {
  schema: GraphQLSchema;
  mesh: Mesh;
  access: Access;
  logger: Logger;
  /** Extra envelop plugins (status caching comes this way). */
  plugins?: Plugin[];
  /** Counts kept by the composer and the news ingest, read by /metrics. */
  observed?: Pick<MetricSources, 'composer' | 'news' | 'responder'>;
}

export interface HttpApp {
  yoga: YogaServerInstance<Record<string, unknown>, GatewayContext>;
  server: Server;
  wss: WebSocketServer;
  /** Serves live status subscriptions over graphql-ws, once per operation and caller (absent without a status feed). */
  fanout?: Fanout;
  /** Keeps `status` query responses per composition (absent without a status feed). */
  statusCache?: StatusQueryCache;
  /** `/ready`, the requests in flight, and the refusal of new ones once draining (SIGTERM). */
  drain: Drain;
  /** `/metrics`: this gateway's own Prometheus registry. */
  metrics: Metrics;
  start(host: string, port: number): Promise<string>;
  stop(): Promise<void>;
}

function forbidden(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'FORBIDDEN', http: { status: 401 } } });
}

/**
 * Yoga on node:http with graphql-ws on the same port and path. HTTP, SSE and WebSocket share one
 * envelop (auth, context, limits, masking), as graphql-yoga's graphql-ws example lays it out.
 */
export function buildHttpApp(options: ServerOptions): HttpApp {
  const { mesh, access, logger } = options;

  const callerFor = (authorization: string | null | undefined): Caller => {
    const { caller, refusal } = judgeCaller(access, authorization);
    if (refusal !== undefined) throw forbidden(refusal);
    return caller;
  };

  const rate = new OperationRate(mesh.config.caps.operationsPerSecond);
  const persisted = loadPersistedOperations(mesh.config.persistedOnly);
  if (persisted.only) logger.info({ operations: persisted.size }, 'MESH_PERSISTED_ONLY: answering the manifest operations only');
  const health = meshHealth(mesh);
  let wss: WebSocketServer | undefined;
  // Made before the fan-out, so its time per composition is measured around the fan-out's listener.
  let streams: LiveStreams | undefined;
  const metrics = createMetrics({ mesh, health, sockets: () => wss?.clients, streams: () => streams?.size(), ...options.observed });
  const fanout = mesh.status ? new Fanout({ feed: mesh.status, fields: LIVE_STATUS_FIELDS, logger }) : undefined;
  const statusCache = mesh.status ? statusQueryCache({ feed: mesh.status, access, fields: STATUS_QUERY_FIELDS }) : undefined;
  metrics.afterFanout({ fanout, statusCache });
  const log = accessLog(logger, access, metrics.request);
  // Sockets and HTTP streams on the same rules: caps, expiry, revocation.
  const doors = liveDoors(access, logger, mesh.config.caps);
  streams = liveStreams(doors, access);
  // Every check a request meets, once: each door below runs this one list (src/server/guards/).
  const guards: Guards = guardsOf({
    access,
    loopbackOnly: access.open,
    corsOrigins: mesh.config.corsOrigins,
    draining: () => drain.draining,
    rate,
    persisted,
    live: doors,
    subscriptionsPerSocket: mesh.config.caps.subscriptionsPerSocket,
  });
  const graphiql = offlineGraphiQL();
  const yoga = createYoga<Record<string, unknown>, GatewayContext>({
    schema: options.schema,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    // No MESH_CORS_ORIGINS: no page of another origin may read an answer (Yoga's default echoes any Origin).
    cors: mesh.config.corsOrigins.length ? { origin: mesh.config.corsOrigins, credentials: true } : false,
    // Bounded by useRequestBodyLimit below, at the same size, without a counting stream per POST.
    maxRequestBodySize: false,
    graphiql: { title: 'mesh-gateway', subscriptionsProtocol: 'WS', defaultQuery: GRAPHIQL_DEFAULT_QUERY },
    renderGraphiQL: graphiql.render,
    logging: {
      debug: (...args) => logger.debug(args.length > 1 ? { args } : args[0]),
      info: (...args) => logger.info(args.length > 1 ? { args } : args[0]),
      warn: (...args) => logger.warn(args.length > 1 ? { args } : args[0]),
      error: (...args) => {
        const refusal = args.length === 1 ? clientError(args[0]) : undefined;
        if (refusal) logger.info(refusal, 'request refused');
        else if (args.length === 1 && isStoreUnavailable(args[0] instanceof GraphQLError ? args[0].originalError : args[0]))
          logger.warn({ err: String(args[0]) }, STORE_UNAVAILABLE_MESSAGE);
        else logger.error(args.length > 1 ? { args } : args[0]);
      },
    },
    maskedErrors: {
      maskError(error, message) {
        const original = error instanceof GraphQLError ? error.originalError : error;
        if (original instanceof DomainError) {
          return new GraphQLError(original.message, { extensions: { code: original.code } });
        }
        if (error instanceof GraphQLError && !error.originalError) return error;
        if (original instanceof GraphQLError) return original;
        if (isStoreUnavailable(original)) {
          // An outage, not a fault of this code: a warn line without the stack, every request.
          logger.warn({ err: String(original), path: error instanceof GraphQLError ? error.path : undefined }, STORE_UNAVAILABLE_MESSAGE);
          return new GraphQLError(STORE_UNAVAILABLE_MESSAGE, { extensions: { code: 'UNAVAILABLE' } });
        }
        logger.error({ err: original }, 'unexpected error in a resolver');
        return new GraphQLError(message, { extensions: { code: 'INTERNAL' } });
      },
    },
    context: ({ request, caller }: { request?: Request; caller?: Caller }) => ({
      mesh,
      caller: caller ?? callerFor(request?.headers.get('authorization')),
      loaders: createLoaders(mesh),
      now: new Date(),
      judging: { ...mesh.hearing.current(), heartbeatSeconds: mesh.config.heartbeatSeconds },
    }),
    plugins: [
      // Outermost: an operation's span is active while every other plugin and the execution run.
      useOperationTracing(),
      // First: the operation's name is noted before any plugin answers (the status cache does, early).
      log.plugin,
      operationMetrics(metrics.registry, persisted.names),
      EnvelopArmorPlugin({
        maxDepth: { n: QUERY_LIMITS.depth },
        maxAliases: { n: QUERY_LIMITS.aliases },
        maxTokens: { n: QUERY_LIMITS.tokens },
        // The cost is useQueryCost's, which counts each list's size and names the list it refuses.
        costLimit: { enabled: false },
        maxDirectives: { n: QUERY_LIMITS.directives },
        // Suggestions name fields: a schema oracle where the schema is meant to be closed.
        blockFieldSuggestion: { enabled: mesh.config.production || !mesh.config.introspection || !access.open },
      }),
      // After the armor, whose token limit replaces the parse function this one wraps.
      useDocumentNestingLimit(),
      useNulRefusal(),
      useQueryCost(QUERY_LIMITS.cost),
      ...(mesh.config.introspection ? [] : [disableIntrospection()]),
      ...(options.plugins ?? []),
      ...(fanout ? [liveExecutionPlugin] : []),
      // SSE events of the live status carry the seq as `id:` (Last-Event-ID resumes from it).
      sseIdsPlugin,
      // Marks the streams that run a subscription, which the drain ends.
      streams.plugin,
      // Before the cache, whose request parser keys the parameters these judge: the request and operation stages.
      useGuards(guards),
      // Before the cache, which must key only documents this gateway answers.
      usePersistedOperations(persisted),
      ...(statusCache ? [statusCache.plugin] : []),
      useRequestBodyLimit(),
      useCompiledExecution(logger),
      graphiql.plugin,
    ],
  });

  // /ready's details (replica, NATS address, the store's error) need a read token; anyone may see whether it is ready.
  const drain = createDrain(mesh.config.replica, health, (req) => callerOrNothing(access, req.headers.authorization)?.scopes.has('read') === true);
  const dashboard = dashboardFiles();
  /** Why a request's JWT was refused at its admission, for its 401. */
  const refusals = new WeakMap<IncomingMessage, string>();
  // A draining replica ends its subscription streams: their clients resubscribe on another replica.
  drain.onBegin(() => {
    const ended = streams.endSubscriptions();
    if (ended) logger.info({ streams: ended }, 'draining: subscription streams ended');
  });
  const toYoga = (request: IncomingMessage, response: ServerResponse) =>
    void Promise.resolve(yoga(request, response)).catch((error) => answerEscaped(request, response, error));
  /** A throw out of a guard or a rejection of Yoga's handler: counted and answered 500, never the process's end. */
  const answerEscaped = (_request: IncomingMessage, response: ServerResponse, error: unknown) => {
    noteEscaped(logger, 'request', error);
    if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' }).end('internal error\n');
    else response.destroy();
  };
  // A status query with a kept response is answered here, every check of Yoga's path made; anything else goes on to Yoga.
  const fast = statusCache ? statusFastPath({ cache: statusCache, access, rate, guards, log, endpoint: '/graphql' }) : undefined;
  /** A request asking for a stream is held to the live doors' caps, then to liveAuth (expiry, revocation, the drain): true when refused. */
  const refuseStream = (request: IncomingMessage, response: ServerResponse): boolean => {
    if (!asksForStream(request)) return false;
    // None: a GraphiQL page or a preflight, which stream nothing; anything else was refused before.
    const caller = callerOrNothing(access, request.headers.authorization);
    if (!caller) return false;
    const address = request.socket.remoteAddress ?? 'unknown';
    const refusal = guards.judge('live', { door: httpDoorOf(request.method, request.headers.accept), address, caller });
    if (refusal) {
      logger.info({ caller: caller.name, address }, `stream refused: ${refusal.message}`);
      answerRefusal(request, response, refusal);
      return true;
    }
    streams.hold(request, response, caller, address);
    return false;
  };
  /** The caller stage: a request to the GraphQL endpoint without a known token is refused 401 before Yoga. */
  const refuseCaller = (request: IncomingMessage, response: ServerResponse): boolean => {
    const { method, headers } = request;
    const facts = { door: httpDoorOf(method, headers.accept), method, accept: headers.accept, authorization: headers.authorization };
    const refusal = guards.judge('caller', { ...facts, admission: refusals.get(request) });
    if (refusal) answerRefusal(request, response, refusal);
    return refusal !== undefined;
  };
  const answer = drain.handler((request, response) => {
    if (request.method === 'GET' && request.url?.split('?')[0] === '/metrics') return metrics.serve(request, response, access);
    if (dashboard.serve(request, response)) return;
    if (refuseCaller(request, response) || refuseStream(request, response)) return;
    if (fast) fast(request, response, toYoga);
    else toYoga(request, response);
  });
  /** The arrival stage, on the headers alone: the target, the Host, the drain. */
  const refuseArrival = (request: IncomingMessage, response: ServerResponse): boolean => {
    const { method, url: target, headers } = request;
    const refusal = guards.judge('arrival', { door: httpDoorOf(method, headers.accept), method, target, host: headers.host, origin: headers.origin });
    if (refusal) answerRefusal(request, response, refusal);
    return refusal !== undefined;
  };
  const server = createServer(
    log.http((request, response) => {
      try {
        if (refuseArrival(request, response)) return;
        // A JWT's signature is verified (asynchronously) before anything judges the caller at once.
        const admitted = access.admit(request.headers.authorization);
        if (admitted)
          void admitted
            .then((refusal) => {
              // Kept with this request only: a refusal is kept nowhere else, and the caller guard names it.
              if (refusal !== undefined) refusals.set(request, refusal);
              answer(request, response);
            })
            .catch((error) => answerEscaped(request, response, error));
        else answer(request, response);
      } catch (error) {
        answerEscaped(request, response, error);
      }
    }),
  );
  wss = new WebSocketServer({
    server,
    path: '/graphql',
    maxPayload: 1 << 20,
    // Every refusal is an HTTP status: a guard that throws here would end the process (ws calls it from the upgrade event).
    verifyClient: ({ req }, accept) => {
      try {
        verifyUpgrade(req, accept);
      } catch (error) {
        noteEscaped(logger, 'request', error);
        accept(false, 400, 'the upgrade could not be judged');
      }
    },
  });
  listenForServerErrors(server, wss, logger);

  /** The arrival stage at a WebSocket upgrade: the target, the Host, the drain and the Origin; a refusal is the upgrade's HTTP status. */
  function verifyUpgrade(req: IncomingMessage, accept: (ok: boolean, status?: number, message?: string, headers?: Record<string, string>) => void) {
    const { method, url: target, headers } = req;
    const refusal = guards.judge('arrival', { door: 'graphql-ws connect', method, target, host: headers.host, origin: headers.origin });
    if (!refusal) return accept(true);
    logger.info(
      { guard: refusal.guard, host: headers.host?.slice(0, 200), origin: headers.origin?.slice(0, 200) },
      `WebSocket upgrade refused: ${refusal.message}`,
    );
    accept(false, refusal.status, refusal.message, refusal.headers);
  }

  const wsServer = serveGraphqlWs({ wss, yoga, access, logger, fanout, doors, guards, persisted, accessLog: log });

  return {
    yoga,
    server,
    wss,
    fanout,
    statusCache,
    drain,
    metrics,
    start: (host, port) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          const { address, port: bound } = server.address() as AddressInfo;
          resolve(`http://${address.includes(':') ? `[${address}]` : address}:${bound}/graphql`);
        });
      }),
    async stop() {
      doors.stop();
      health.stop();
      metrics.stop();
      await wsServer.dispose();
      for (const client of wss.clients) client.close(1001, 'the gateway is stopping');
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeIdleConnections();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        setTimeout(() => server.closeAllConnections(), 2_000).unref();
      });
    },
  };
}

/**
 * What a client got wrong, as a log line without a stack: an error of the request itself (no
 * cause) or of the domain (a DomainError: bad input, not found, a conflict). Undefined for a
 * server fault, which is logged at error with its stack.
 */
function clientError(value: unknown): { code: string; message: string; path?: readonly (string | number)[] } | undefined {
  if (!(value instanceof GraphQLError)) return undefined;
  const cause = value.originalError;
  if (cause !== undefined && !(cause instanceof DomainError) && !(cause instanceof GraphQLError)) return undefined;
  const code = cause instanceof DomainError ? cause.code : String(value.extensions?.code ?? 'BAD_REQUEST');
  return { code, message: value.message, path: value.path };
}

function disableIntrospection(): Plugin {
  return {
    onValidate({ addValidationRule }) {
      addValidationRule((context: ValidationContext) => ({
        Field(node: FieldNode) {
          if (node.name.value === '__schema' || node.name.value === '__type') {
            context.reportError(new GraphQLError('introspection is turned off on this gateway', { nodes: [node] }));
          }
        },
      }));
    },
  };
}

import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { type FieldNode, GraphQLError, type GraphQLSchema, type ValidationContext } from 'graphql';
import { createYoga, type Plugin, type YogaServerInstance, type YogaServerOptions } from 'graphql-yoga';
import type { Logger } from 'pino';
import { type Fanout, liveExecutionPlugin } from '../../fanout/engine.js';
import { sseIdsPlugin } from '../../fanout/sse-ids.js';
import type { StatusQueryCache } from '../../fanout/status-query-cache.js';
import { DomainError, isStoreUnavailable, STORE_UNAVAILABLE_MESSAGE } from '../../kernel/errors.js';
import { createLoaders } from '../../schema/loaders.js';
import type { GatewayContext } from '../../schema/support/context.js';
import type { Caller } from '../../services/access/caller.js';
import type { Access } from '../../services/access/tokens.js';
import type { Mesh } from '../../services/mesh.js';
import type { AccessLog } from '../access-log.js';
import { useCompiledExecution } from '../compiled-execution.js';
import { useDocumentNestingLimit, useNulRefusal } from '../document-guard.js';
import { GRAPHIQL_DEFAULT_QUERY, offlineGraphiQL } from '../graphiql.js';
import { judgeCaller } from '../guards/caller.js';
import type { Guards } from '../guards/index.js';
import { useGuards } from '../guards/yoga.js';
import type { LiveStreams } from '../live-doors.js';
import type { Metrics } from '../metrics.js';
import { operationMetrics } from '../operation-metrics.js';
import { type PersistedOperations, usePersistedOperations } from '../persisted.js';
import { useQueryCost } from '../query-cost.js';
import { useRequestBodyLimit } from '../request-body-limit.js';
import { useOperationTracing } from '../tracing.js';

/** Limits on what one operation may ask, so no query however deep or wide takes the process down. */
export const QUERY_LIMITS = { depth: 12, aliases: 30, tokens: 5_000, cost: 50_000, directives: 50 };

/** What Yoga is built from: the schema, the mesh, and the gateway's guards, counts and caches. */
export interface YogaRoom {
  schema: GraphQLSchema;
  mesh: Mesh;
  access: Access;
  logger: Logger;
  /** Extra envelop plugins (status caching comes this way). */
  plugins?: Plugin[];
  metrics: Metrics;
  persisted: PersistedOperations;
  guards: Guards;
  fanout?: Fanout;
  statusCache?: StatusQueryCache;
  streams: LiveStreams;
  log: AccessLog;
}

function forbidden(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'FORBIDDEN', http: { status: 401 } } });
}

/**
 * Yoga at `/graphql`: one envelop (auth, context, limits, masking) for HTTP, SSE and WebSocket,
 * as graphql-yoga's graphql-ws example lays it out.
 */
export function buildYoga(room: YogaRoom): YogaServerInstance<Record<string, unknown>, GatewayContext> {
  const { mesh, access, logger } = room;
  const callerFor = (authorization: string | null | undefined): Caller => {
    const { caller, refusal } = judgeCaller(access, authorization);
    if (refusal !== undefined) throw forbidden(refusal);
    return caller;
  };
  const graphiql = offlineGraphiQL();
  return createYoga<Record<string, unknown>, GatewayContext>({
    schema: room.schema,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    // No MESH_CORS_ORIGINS: no page of another origin may read an answer (Yoga's default echoes any Origin).
    cors: mesh.config.corsOrigins.length ? { origin: mesh.config.corsOrigins, credentials: true } : false,
    // Bounded by useRequestBodyLimit below, at the same size, without a counting stream per POST.
    maxRequestBodySize: false,
    graphiql: { title: 'mesh-gateway', subscriptionsProtocol: 'WS', defaultQuery: GRAPHIQL_DEFAULT_QUERY },
    renderGraphiQL: graphiql.render,
    logging: yogaLogging(logger),
    maskedErrors: { maskError: maskErrorOf(logger) },
    context: ({ request, caller }: { request?: Request; caller?: Caller }) => ({
      mesh,
      caller: caller ?? callerFor(request?.headers.get('authorization')),
      loaders: createLoaders(mesh),
      now: new Date(),
      judging: { ...mesh.hearing.current(), heartbeatSeconds: mesh.config.heartbeatSeconds },
    }),
    plugins: [...yogaPlugins(room), graphiql.plugin],
  });
}

type YogaLogger = Exclude<YogaServerOptions<Record<string, unknown>, GatewayContext>['logging'], boolean | string | undefined>;

/** Yoga's log lines on pino: a client's error at info without a stack, an outage at warn. */
function yogaLogging(logger: Logger): YogaLogger {
  return {
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
  };
}

/** What a client sees of an error: a domain error as it is, an outage as UNAVAILABLE, anything else masked as INTERNAL. */
function maskErrorOf(logger: Logger) {
  return (error: unknown, message: string): GraphQLError => {
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
  };
}

/** The envelop's plugins, in the order they must run (GraphiQL's last). */
function yogaPlugins(room: YogaRoom): Plugin[] {
  const { mesh, access, logger, metrics, persisted, guards, fanout, statusCache, streams, log } = room;
  return [
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
    ...(room.plugins ?? []),
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
  ];
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

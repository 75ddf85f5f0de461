import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GraphQLSchema } from 'graphql';
import type { Plugin, YogaServerInstance } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { WebSocketServer } from 'ws';
import { Fanout } from '../fanout/engine.js';
import { LIVE_STATUS_FIELDS, STATUS_QUERY_FIELDS } from '../fanout/status-fields.js';
import { type StatusQueryCache, statusQueryCache } from '../fanout/status-query-cache.js';
import type { GatewayContext } from '../schema/support/context.js';
import type { Access } from '../services/access/tokens.js';
import type { Mesh } from '../services/mesh.js';
import { accessLog } from './access-log.js';
import { dashboardFiles } from './dashboard.js';
import { serveGraphqlWs } from './graphql-ws.js';
import { callerOrNothing } from './guards/caller.js';
import { type Guards, guardsOf } from './guards/index.js';
import { meshHealth } from './health.js';
import { requestListener } from './http/requests.js';
import { webSocketServer } from './http/upgrade.js';
import { buildYoga } from './http/yoga.js';
import { listenForServerErrors } from './last-resort.js';
import { type LiveStreams, liveAuth, liveStreams } from './live-doors.js';
import { createMetrics, type MetricSources, type Metrics } from './metrics.js';
import { loadPersistedOperations } from './persisted.js';
import { OperationRate } from './rate-limit.js';
import { createDrain, type Drain } from './ready.js';
import { statusFastPath } from './status-fast-path.js';

export { QUERY_LIMITS } from './http/yoga.js';

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

/**
 * Yoga on node:http with graphql-ws on the same port and path, wired from rooms of their own:
 * Yoga's envelop (http/yoga.ts), the HTTP door (http/requests.ts), the WebSocket upgrade
 * (http/upgrade.ts) and graphql-ws (graphql-ws.ts), every door running the one list of guards.
 */
export function buildHttpApp(options: ServerOptions): HttpApp {
  const { mesh, access, logger } = options;
  const rate = new OperationRate(mesh.config.caps.operationsPerSecond);
  const persisted = loadPersistedOperations(mesh.config.persistedOnly);
  if (persisted.only) logger.info({ operations: persisted.size }, 'MESH_PERSISTED_ONLY: answering the manifest operations only');
  const health = meshHealth(mesh);
  let wss: WebSocketServer | undefined;
  // Made before the fan-out, so its time per composition is measured around the fan-out's listener.
  let streams: LiveStreams | undefined;
  const metrics = createMetrics({ mesh, health, sockets: () => wss?.clients, streams: () => streams?.size(), ...options.observed });
  const fanout = mesh.status ? new Fanout({ feed: mesh.status, fields: LIVE_STATUS_FIELDS, logger }) : undefined;
  const statusCache = mesh.status
    ? statusQueryCache({ feed: mesh.status, callerOf: (authorization) => callerOrNothing(access, authorization), fields: STATUS_QUERY_FIELDS })
    : undefined;
  metrics.afterFanout({ fanout, statusCache });
  const log = accessLog(logger, access, metrics.request);
  // Sockets and HTTP streams on the same rules: caps, expiry, revocation (liveAuth).
  const doors = liveAuth(access, logger, mesh.config.caps);
  const held = liveStreams(doors, access);
  streams = held;
  // /ready's details (replica, NATS address, the store's error) need a read token; anyone may see whether it is ready.
  const drain = createDrain(mesh.config.replica, health, (req) => callerOrNothing(access, req.headers.authorization)?.scopes.has('read') === true);
  // Every check a request meets, once: each door runs this one list (src/server/guards/).
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
  const yoga = buildYoga({ ...options, metrics, persisted, guards, fanout, statusCache, streams: held, log });
  // A draining replica ends its subscription streams: their clients resubscribe on another replica.
  drain.onBegin(() => {
    const ended = doors.drain();
    if (ended) logger.info({ streams: ended }, 'draining: subscription streams ended');
  });
  // A status query with a kept response is answered here, every guard of Yoga's path run; anything else goes on to Yoga.
  const fast = statusCache ? statusFastPath({ cache: statusCache, access, rate, guards, log, endpoint: '/graphql' }) : undefined;
  const listener = requestListener({ yoga, access, logger, guards, streams: held, drain, metrics, dashboard: dashboardFiles(), fast });
  const server = createServer(log.http(listener));
  server.keepAliveTimeout = KEEP_ALIVE_IDLE_MS;
  server.headersTimeout = KEEP_ALIVE_IDLE_MS + 1_000;
  wss = webSocketServer(server, guards, logger);
  listenForServerErrors(server, wss, logger);
  const wsServer = serveGraphqlWs({ wss, yoga, access, logger, fanout, doors, guards, persisted, accessLog: log });
  const sockets = wss;
  return {
    yoga,
    server,
    wss: sockets,
    fanout,
    statusCache,
    drain,
    metrics,
    start: (host, port) => listen(server, host, port),
    async stop() {
      doors.stop();
      health.stop();
      metrics.stop();
      await wsServer.dispose();
      await closeAll(server, sockets);
    },
  };
}

/**
 * How long an idle keep-alive connection is kept (Node's default is 5 s). A request sent on a
 * connection just as the gateway closes it is reset: a 502 at a load balancer, ECONNRESET at a
 * client (seen in the suite: a client whose process stalled a few seconds between requests). This
 * outlasts the balancers' usual idle time-out (60 s), so the balancer, not the gateway, closes an
 * idle connection; headers must then come within a second more than this (Node's default 60 s).
 */
export const KEEP_ALIVE_IDLE_MS = 65_000;

/** Listens on `host`:`port`; resolves with the GraphQL endpoint's URL. */
function listen(server: Server, host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const { address, port: bound } = server.address() as AddressInfo;
      resolve(`http://${address.includes(':') ? `[${address}]` : address}:${bound}/graphql`);
    });
  });
}

/** Closes every socket (1001), then the server: idle connections at once, the rest within 2 s. */
async function closeAll(server: Server, wss: WebSocketServer): Promise<void> {
  for (const client of wss.clients) client.close(1001, 'the gateway is stopping');
  await new Promise<void>((resolve) => wss.close(() => resolve()));
  server.closeIdleConnections();
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    setTimeout(() => server.closeAllConnections(), 2_000).unref();
  });
}

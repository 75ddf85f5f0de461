import type { IncomingMessage, ServerResponse } from 'node:http';
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import type { WebSocketServer } from 'ws';
import type { Access } from '../services/access/tokens.js';
import type { Responder } from '../services/controller/responder.js';
import type { Mesh } from '../services/mesh.js';
import type { NewsIngest } from '../services/news/ingest.js';
import type { Composer } from '../services/status/composing/composer.js';
import { judgeCaller } from './guards/caller.js';
import type { Health } from './health.js';
import { callMetrics } from './metrics/calls.js';
import { compositionMetrics } from './metrics/composition.js';
import { doorMetrics } from './metrics/doors.js';
import { healthMetrics } from './metrics/health.js';
import { FAST_BUCKETS_S, type LiveParts, liveMetrics } from './metrics/live.js';
import { newsMetrics } from './metrics/news.js';

/** The parts of the running gateway /metrics reads: each keeps its own counts, read at scrape time. */
export interface MetricSources {
  mesh: Pick<Mesh, 'status' | 'views' | 'leases' | 'config' | 'hearing' | 'statusSeal'> & { bus: Pick<Mesh['bus'], 'authRequired'> };
  health: Health;
  /** The sockets, read at scrape time (the server is made after the metrics). */
  sockets(): WebSocketServer['clients'] | undefined;
  /** The HTTP streams open (SSE, multipart/mixed), read at scrape time. */
  streams?(): number | undefined;
  composer?: Composer;
  news?: NewsIngest;
  /** The NATS door of the controller's verbs: the requests it refused before they became calls. */
  responder?: Pick<Responder, 'refused'>;
}

export interface Metrics {
  registry: Registry;
  /** Call once the fan-out listens to the feed: its time per composition is measured around it. */
  afterFanout(parts: LiveParts): void;
  /** Counts one answered HTTP request (status-cache answers included: they are counted here, below Yoga). */
  request(method: string, status: number, seconds: number): void;
  /** Answers `GET /metrics` (with a token of the `read` scope when tokens are configured). */
  serve(req: IncomingMessage, res: ServerResponse, access: Access): void;
  stop(): void;
}

/**
 * The gateway's Prometheus metrics, in a registry of its own (tests run several gateways in one
 * process). Most are read at scrape time from the counts the composer, the fan-out, the status
 * cache, the news ingest and the calls view already keep; compose and fan-out times are observed
 * as each composition is heard. docs/metrics.md lists them.
 */
export function createMetrics(sources: MetricSources): Metrics {
  const { mesh } = sources;
  const registry = new Registry();
  registry.setDefaultLabels({ replica: mesh.config.replica });
  collectDefaultMetrics({ register: registry, prefix: 'mesh_' });
  const compositionHeard = compositionMetrics(registry, mesh, sources.composer?.stats);
  const current = mesh.status.current();
  if (current) compositionHeard(current);
  const live = liveMetrics(registry, mesh, sources);
  const unsubscribers = [
    mesh.status.subscribe((composition) => {
      live.heard();
      compositionHeard(composition);
    }),
  ];
  newsMetrics(registry, mesh, sources.news);
  doorMetrics(registry, mesh, sources.responder);
  callMetrics(registry, mesh);
  healthMetrics(registry, mesh, sources.health);
  const request = requestMetrics(registry);
  return {
    registry,
    afterFanout(parts) {
      unsubscribers.push(live.afterFanout(parts));
    },
    request,
    serve(req, res, access) {
      serveMetrics(registry, req, res, access);
    },
    stop() {
      for (const unsubscribe of unsubscribers) unsubscribe();
      registry.clear();
    },
  };
}

/** The HTTP requests answered, by method and status, and the time each took. */
function requestMetrics(registry: Registry): Metrics['request'] {
  const requests = new Counter({
    name: 'mesh_http_requests_total',
    help: 'HTTP requests answered, by method and status.',
    labelNames: ['method', 'status'],
    registers: [registry],
  });
  const requestTime = new Histogram({
    name: 'mesh_http_request_seconds',
    help: 'Time to answer an HTTP request (SSE streams excluded).',
    buckets: FAST_BUCKETS_S,
    registers: [registry],
  });
  return (method, status, seconds) => {
    requests.inc({ method, status: String(status) });
    requestTime.observe(seconds);
  };
}

/** The exposition: the registry's text to a caller of the `read` scope (anyone when the gateway is open), 401 or 403 to others. */
function serveMetrics(registry: Registry, req: IncomingMessage, res: ServerResponse, access: Access): void {
  if (!access.open) {
    const verdict = judgeCaller(access, req.headers.authorization);
    if (!verdict.caller) {
      res.writeHead(401, { 'content-type': 'text/plain; charset=utf-8', 'www-authenticate': 'Bearer' });
      return void res.end(`${verdict.refusal}\n`);
    }
    if (!verdict.caller.scopes.has('read')) {
      res.writeHead(403, { 'content-type': 'text/plain; charset=utf-8' });
      return void res.end('the token lacks the read scope\n');
    }
  }
  registry.metrics().then(
    (text) => {
      res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' });
      res.end(text);
    },
    (error) => {
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`metrics failed: ${(error as Error).message}\n`);
    },
  );
}

import { Histogram, type Registry } from 'prom-client';
import type { Fanout } from '../../fanout/engine.js';
import type { StatusQueryCache } from '../../fanout/status-query-cache.js';
import type { Mesh } from '../../services/mesh.js';
import { readCounter, readGauge } from './read.js';

/** Fan-out and HTTP times (seconds). */
export const FAST_BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];

/** The live doors' parts, made after the metrics: read once they are there. */
export interface LiveParts {
  fanout?: Fanout;
  statusCache?: StatusQueryCache;
}

/** What the live doors open, read at scrape time. */
export interface LiveDoors {
  sockets(): { size: number } | undefined;
  streams?(): number | undefined;
}

export interface LiveMetrics {
  /** Marks a composition heard, before the fan-out's own listener hands it on. */
  heard(): void;
  /** Starts timing the fan-out (its listener runs between `heard` and this one's) and reads its parts. */
  afterFanout(parts: LiveParts): () => void;
}

/**
 * The live path: the fan-out's time per composition and its counts, the sockets and HTTP streams
 * open, the status query cache. Its parts come later (`afterFanout`): until then nothing is shown.
 */
export function liveMetrics(registry: Registry, mesh: Pick<Mesh, 'status'>, doors: LiveDoors): LiveMetrics {
  let parts: LiveParts = {};
  const fanout = () => parts.fanout?.stats();
  const cache = () => parts.statusCache?.stats();
  // The fan-out's own listener runs between heard() and the listener afterFanout adds: its diff, executions and socket writes.
  const fanoutTime = new Histogram({
    name: 'mesh_fanout_seconds',
    help: 'Time the fan-out spent handing one composition to every group (diff, executions, writes queued), synchronously.',
    buckets: FAST_BUCKETS_S,
    registers: [registry],
  });
  let fanoutStarted = 0;
  readGauge(registry, 'mesh_status_subscribers', 'Live status subscriptions served by the fan-out.', () => fanout()?.subscribers);
  readGauge(registry, 'mesh_status_groups', 'Groups of the fan-out: subscribers sharing one operation, variables and token.', () => fanout()?.groups);
  readGauge(registry, 'mesh_status_subscribers_waiting', 'Subscribers with a composition waiting behind a busy socket.', () => fanout()?.waiting);
  readCounter(registry, 'mesh_fanout_executions_total', 'Executions of a group operation over a composition.', () => fanout()?.executions);
  readCounter(registry, 'mesh_fanout_sent_total', 'Messages the fan-out wrote to sockets.', () => fanout()?.sent);
  readCounter(registry, 'mesh_fanout_skipped_total', 'Compositions a slow subscriber skipped (a newer one replaced it).', () => fanout()?.skipped);
  readGauge(registry, 'mesh_websockets', 'Open WebSocket connections.', () => doors.sockets()?.size);
  readGauge(registry, 'mesh_http_streams', 'Open HTTP streams (SSE, multipart/mixed), held to the sockets’ caps.', () => doors.streams?.());

  readCounter(registry, 'mesh_status_query_cache_hits_total', 'status queries answered from the per-composition cache.', () => cache()?.hits);
  readCounter(registry, 'mesh_status_query_cache_misses_total', 'status queries executed (then kept).', () => cache()?.misses);
  readGauge(registry, 'mesh_status_query_cache_bytes', 'Bytes of kept status answers.', () => cache()?.bytes);
  return {
    heard() {
      fanoutStarted = performance.now();
    },
    afterFanout(later) {
      parts = later;
      return mesh.status.subscribe(() => fanoutTime.observe((performance.now() - fanoutStarted) / 1000));
    },
  };
}

import type { IncomingMessage, ServerResponse } from 'node:http';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { WebSocketServer } from 'ws';
import type { Fanout } from '../fanout/engine.js';
import type { StatusQueryCache } from '../fanout/status-query-cache.js';
import { natsOpenBehindClosedDoors } from '../services/access/open-nats.js';
import type { Access } from '../services/access/tokens.js';
import { CALL_DOORS, CALL_STATES, refusedCalls } from '../services/calls/records.js';
import { NATS_REFUSALS, type Responder } from '../services/controller/responder.js';
import { recordRelayLag } from '../services/hand-acts/outbox.js';
import type { Mesh } from '../services/mesh.js';
import type { NewsIngest } from '../services/news/ingest.js';
import type { Composer } from '../services/status/composing/composer.js';
import { STATUS_REFUSALS } from '../services/status/replicating/wire.js';
import type { Health } from './health.js';
import { escapedCounts } from './last-resort.js';

/** Compose times (seconds) the histogram tells apart: a composition takes milliseconds at 1,000 machines, tens at 10,000. */
const COMPOSE_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** Fan-out and HTTP times (seconds). */
const FAST_BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];

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
  afterFanout(parts: { fanout?: Fanout; statusCache?: StatusQueryCache }): void;
  /** Counts one answered HTTP request (status-cache answers included: they are counted here, below Yoga). */
  request(method: string, status: number, seconds: number): void;
  /** Answers `GET /metrics` (with a token of the `read` scope when tokens are configured). */
  serve(req: IncomingMessage, res: ServerResponse, access: Access): void;
  stop(): void;
}

/** A counter whose value is read from a count kept elsewhere, at scrape time. */
function readCounter(registry: Registry, name: string, help: string, read: () => number | undefined): void {
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const value = read();
      this.reset();
      if (value) this.inc(value);
    },
  });
}

function readGauge(registry: Registry, name: string, help: string, read: () => number | undefined | Promise<number | undefined>): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    async collect() {
      const value = await read();
      if (value === undefined) this.reset();
      else this.set(value);
    },
  });
}

/**
 * The gateway's Prometheus metrics, in a registry of its own (tests run several gateways in one
 * process). Most are read at scrape time from the counts the composer, the fan-out, the status
 * cache, the news ingest and the calls view already keep; compose and fan-out times are observed
 * as each composition is heard. docs/metrics.md lists them.
 */
export function createMetrics(sources: MetricSources): Metrics {
  const { mesh, health } = sources;
  let fanout: Fanout | undefined;
  let cache: StatusQueryCache | undefined;
  const registry = new Registry();
  registry.setDefaultLabels({ replica: mesh.config.replica });
  collectDefaultMetrics({ register: registry, prefix: 'mesh_' });
  const composer = sources.composer?.stats;
  const news = sources.news?.stats;

  readCounter(
    registry,
    'mesh_compositions_total',
    'Compositions this replica composed (it composes while it holds the serving lease).',
    () => composer?.compositions,
  );
  readCounter(registry, 'mesh_composition_failures_total', 'Compositions this replica tried and failed (the store away, mostly).', () => composer?.failures);
  const heard = new Counter({ name: 'mesh_compositions_heard_total', help: 'Compositions this replica heard on the status subject.', registers: [registry] });
  const composeTime = new Histogram({
    name: 'mesh_compose_seconds',
    help: 'How long each composition heard took to compose (its tookMs).',
    buckets: COMPOSE_BUCKETS_S,
    registers: [registry],
  });
  const size = new Gauge({
    name: 'mesh_composition_items',
    help: 'Items in the last composition heard, by list.',
    labelNames: ['list'],
    registers: [registry],
  });
  readGauge(registry, 'mesh_composition_seq', 'The seq of the last composition heard.', () => mesh.status.current()?.seq);
  readGauge(registry, 'mesh_composition_age_seconds', 'Seconds since the last composition heard was composed.', () => {
    const at = mesh.status.current()?.composedAt;
    return at ? (Date.now() - Date.parse(at)) / 1000 : undefined;
  });
  const plans = new Gauge({ name: 'mesh_plans', help: 'Plans in the last composition heard, by state.', labelNames: ['state'], registers: [registry] });
  const machines = new Gauge({
    name: 'mesh_machines',
    help: 'Machines in the last composition heard, by state.',
    labelNames: ['state'],
    registers: [registry],
  });
  readGauge(
    registry,
    'mesh_hand_acts_week',
    'Hand-acts of the last 7 days, as the last composition counted them.',
    () => mesh.status.current()?.handActsThisWeek,
  );
  readGauge(registry, 'mesh_hand_acts_kept', "Hand-acts in this replica's view of the hand-act bucket.", () => mesh.views.handActs.size);
  readGauge(registry, 'mesh_repeated_causes', 'Causes given to more than one hand-act this week.', () => mesh.status.current()?.repeatedCauses.length);

  const onComposition = (composition: NonNullable<ReturnType<typeof mesh.status.current>>) => {
    heard.inc();
    composeTime.observe(composition.tookMs / 1000);
    size.set({ list: 'machines' }, composition.machines.length);
    size.set({ list: 'seats' }, composition.seats.length);
    size.set({ list: 'plans' }, composition.plans.length);
    size.set({ list: 'unheldSeats' }, composition.unheldSeats.length);
    for (const state of ['UP', 'LATE', 'SILENT']) machines.set({ state }, composition.machines.filter((m) => m.state === state).length);
    const byState = new Map<string, number>([
      ['QUEUED', 0],
      ['OPEN', 0],
      ['STOPPED', 0],
    ]);
    for (const plan of composition.plans) byState.set(plan.state, (byState.get(plan.state) ?? 0) + 1);
    for (const [state, count] of byState) plans.set({ state }, count);
  };
  const current = mesh.status.current();
  if (current) onComposition(current);

  // The fan-out's own listener runs between these two: its diff, executions and socket writes.
  const fanoutTime = new Histogram({
    name: 'mesh_fanout_seconds',
    help: 'Time the fan-out spent handing one composition to every group (diff, executions, writes queued), synchronously.',
    buckets: FAST_BUCKETS_S,
    registers: [registry],
  });
  let fanoutStarted = 0;
  const unsubscribers = [
    mesh.status.subscribe((composition) => {
      fanoutStarted = performance.now();
      onComposition(composition);
    }),
  ];
  readGauge(registry, 'mesh_status_subscribers', 'Live status subscriptions served by the fan-out.', () => fanout?.stats().subscribers);
  readGauge(registry, 'mesh_status_groups', 'Groups of the fan-out: subscribers sharing one operation, variables and token.', () => fanout?.stats().groups);
  readGauge(registry, 'mesh_status_subscribers_waiting', 'Subscribers with a composition waiting behind a busy socket.', () => fanout?.stats().waiting);
  readCounter(registry, 'mesh_fanout_executions_total', 'Executions of a group operation over a composition.', () => fanout?.stats().executions);
  readCounter(registry, 'mesh_fanout_sent_total', 'Messages the fan-out wrote to sockets.', () => fanout?.stats().sent);
  readCounter(registry, 'mesh_fanout_skipped_total', 'Compositions a slow subscriber skipped (a newer one replaced it).', () => fanout?.stats().skipped);
  readGauge(registry, 'mesh_websockets', 'Open WebSocket connections.', () => sources.sockets()?.size);
  readGauge(registry, 'mesh_http_streams', 'Open HTTP streams (SSE, multipart/mixed), held to the sockets’ caps.', () => sources.streams?.());

  readCounter(registry, 'mesh_status_query_cache_hits_total', 'status queries answered from the per-composition cache.', () => cache?.stats().hits);
  readCounter(registry, 'mesh_status_query_cache_misses_total', 'status queries executed (then kept).', () => cache?.stats().misses);
  readGauge(registry, 'mesh_status_query_cache_bytes', 'Bytes of kept status answers.', () => cache?.stats().bytes);

  readGauge(
    registry,
    'mesh_news_lag_seconds',
    "How far the oldest news not yet written is behind this replica's clock; 0 when caught up. States are judged at the instant written up to (docs/status.md).",
    () => mesh.hearing.lagMs() / 1000,
  );
  readGauge(
    registry,
    'mesh_news_pending',
    'News messages stored in the news stream and not yet written: not yet delivered, or delivered and not acknowledged.',
    () => mesh.hearing.current().pending,
  );
  readCounter(registry, 'mesh_news_received_total', 'News messages received from the stream.', () => news?.received);
  readCounter(registry, 'mesh_news_ingested_total', 'News messages written to the store.', () => news?.ingested);
  readCounter(registry, 'mesh_news_malformed_total', 'News messages refused by the wire contract (acknowledged, dropped).', () => news?.malformed);
  readCounter(registry, 'mesh_news_dropped_total', 'Valid news the store refused alone (poison: found by splitting its batch, dropped).', () => news?.poison);
  readCounter(registry, 'mesh_news_redelivered_total', 'News handed back unwritten while the store was away (delivered again).', () => news?.redelivered);

  new Counter({
    name: 'mesh_nats_refused_total',
    help: "NATS requests to the controller refused before they became calls (not kept), by reason: unnamed, scope, unknown-verb, unproven (on the controller's own subject without a replica's proof).",
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      const refused = sources.responder?.refused();
      this.reset();
      for (const reason of NATS_REFUSALS) this.inc({ reason }, refused?.[reason] ?? 0);
    },
  });

  readGauge(
    registry,
    'mesh_nats_open',
    'Whether the NATS server accepts any client (auth_required false) while the HTTP doors require tokens: 1 open (see docs/access.md), 0 not.',
    () => (natsOpenBehindClosedDoors(mesh.config, mesh.bus) ? 1 : 0),
  );

  new Counter({
    name: 'mesh_status_refused_total',
    help: 'Status messages (compositions, deltas) this replica refused, by reason: unsealed, forged, not-serving, stale-term, seq-out-of-bounds, seq-jump, too-large, malformed.',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      const refused = mesh.statusSeal.refused();
      this.reset();
      for (const reason of STATUS_REFUSALS) this.inc({ reason }, refused[reason]);
    },
  });

  new Counter({
    name: 'mesh_calls_refused_total',
    help: 'Calls refused before any work (bad arguments, unknown verb, BUSY), by error code: counted, never kept.',
    labelNames: ['code'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [code, count] of refusedCalls(mesh)) this.inc({ code }, count);
    },
  });
  readGauge(
    registry,
    'mesh_record_outbox_waiting',
    'Hand-acts and call records committed with their acts, not yet relayed to the buckets.',
    () => recordRelayLag().waiting,
  );
  readGauge(
    registry,
    'mesh_record_outbox_oldest_seconds',
    'Age of the oldest record waiting in the outbox; 0 when none waits.',
    () => recordRelayLag().oldestMs / 1000,
  );

  new Gauge({
    name: 'mesh_calls',
    help: "Calls in this replica's view of the calls bucket, by state and door.",
    labelNames: ['state', 'door'],
    registers: [registry],
    collect() {
      const counts = new Map<string, number>();
      for (const state of CALL_STATES) for (const door of CALL_DOORS) counts.set(`${state} ${door}`, 0);
      for (const { value } of mesh.views.calls.values()) counts.set(`${value.state} ${value.door}`, (counts.get(`${value.state} ${value.door}`) ?? 0) + 1);
      for (const [key, count] of counts) {
        const [state, door] = key.split(' ') as [string, string];
        this.set({ state, door }, count);
      }
    },
  });
  readGauge(registry, 'mesh_calls_running', 'Calls RUNNING, as the last composition counted them.', () => mesh.status.current()?.callsRunning);

  readGauge(registry, 'mesh_serving_lease', '1 while this replica holds the serving lease (it composes).', () => (mesh.leases.isServing() ? 1 : 0));
  readGauge(registry, 'mesh_nats_connected', '1 while the NATS connection is up.', () => (health.nats().ok ? 1 : 0));
  readGauge(registry, 'mesh_store_connected', '1 while the store answers select 1 (within STORE_CHECK_TIMEOUT_MS).', async () =>
    (await health.store()).ok ? 1 : 0,
  );
  readGauge(registry, 'mesh_ready', '1 while /ready would answer 200 (draining aside).', async () =>
    Object.values(await health.checks()).every((c) => c.ok) ? 1 : 0,
  );

  new Counter({
    name: 'mesh_uncaught_total',
    help: 'Errors that escaped every guard and reached the last resort (logged at error; the process goes on serving), by place. Should stay 0.',
    labelNames: ['place'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [place, count] of escapedCounts()) this.inc({ place }, count);
    },
  });

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

  return {
    registry,
    afterFanout(parts) {
      ({ fanout, statusCache: cache } = parts);
      unsubscribers.push(mesh.status.subscribe(() => fanoutTime.observe((performance.now() - fanoutStarted) / 1000)));
    },
    request(method, status, seconds) {
      requests.inc({ method, status: String(status) });
      requestTime.observe(seconds);
    },
    serve(req, res, access) {
      if (!access.open) {
        let scopes: ReadonlySet<string>;
        try {
          scopes = access.callerFor(req.headers.authorization).scopes;
        } catch (error) {
          res.writeHead(401, { 'content-type': 'text/plain; charset=utf-8', 'www-authenticate': 'Bearer' });
          return void res.end(`${(error as Error).message}\n`);
        }
        if (!scopes.has('read')) {
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
    },
    stop() {
      for (const unsubscribe of unsubscribers) unsubscribe();
      registry.clear();
    },
  };
}

import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { ensureBuckets } from './bus/buckets.js';
import { connectBus } from './bus/nats.js';
import { ensureNewsStream } from './bus/news-stream.js';
import { ensureStatusStream } from './bus/status-stream.js';
import { subjectsUnder } from './bus/subjects.js';
import { type Config, NATS_URL_FILE } from './config.js';
import { isStoreUnavailable } from './kernel/errors.js';
import { schema } from './schema/index.js';
import { buildHttpApp, type HttpApp } from './server/http.js';
import { startJwtVerifier } from './services/access/jwt.js';
import { loadNatsUsers, watchNatsUsersFile } from './services/access/nats-users.js';
import { startReplicaKeys } from './services/access/replica-key.js';
import { loadAccess, watchTokensFile } from './services/access/tokens.js';
import { startCallView } from './services/calls/records.js';
import { startResponder } from './services/controller/responder.js';
import { CONTROLLER_VERBS } from './services/controller/verbs.js';
import { startDurationPruning } from './services/durations/durations.js';
import { MeshEvents } from './services/events.js';
import { startHandActView } from './services/hand-acts/hand-acts.js';
import type { Mesh } from './services/mesh.js';
import { startNewsHearing } from './services/news/hearing.js';
import { hearingReplayMs } from './services/news/hearing-follower.js';
import { hearingShareSubject } from './services/news/hearing-share.js';
import { type NewsIngest, startNewsIngest } from './services/news/ingest.js';
import { newsWrittenThrough } from './services/news/partitions.js';
import { startRecordRelay } from './services/outbox/outbox.js';
import { startPlanChanges } from './services/plans/changes.js';
import { startApplyResends } from './services/plans/resends.js';
import { startApplyTimeouts } from './services/plans/timeouts.js';
import { startLeases } from './services/replicas/leases.js';
import { compiledCatalogue } from './services/seats/catalogue.js';
import { seedSeats } from './services/seats/seeding.js';
import { type Composer, startComposer } from './services/status/composing/composer.js';
import { composeSubject, pokeBody } from './services/status/composing/poke.js';
import { startStatusFeed } from './services/status/live/feed.js';
import { startStatusCounts } from './services/status/looking-back/counts.js';
import { startLookBackIndex } from './services/status/looking-back/look-back-index.js';
import { statusSeal } from './services/status/replicating/seal.js';
import { isCrossedByAnother, openStore, STORE_IDLE_IN_TRANSACTION_MS, type Store, waitForStore } from './store/db.js';
import { migrateToLatest } from './store/migrate.js';

export interface Gateway {
  url: string;
  mesh: Mesh;
  http: HttpApp;
  news: NewsIngest;
  composer: Composer;
  stop(): Promise<void>;
}

/** Writes `<dataDir>/nats.url`; the returned stop removes it while it still names this gateway's NATS. */
function noteNatsUrl(dataDir: string, url: string): () => Promise<void> {
  const path = join(dataDir, NATS_URL_FILE);
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(path, `${url}\n`);
  return async () => {
    try {
      if (readFileSync(path, 'utf8').trim() === url) rmSync(path, { force: true });
    } catch {
      // Already gone.
    }
  };
}

export interface GatewayOptions {
  logger: Logger;
  /** Called once per SQL statement; tests count statements with it. */
  onQuery?: (sql: string) => void;
}

/**
 * Opens the store (waiting, with backoff, while it cannot be reached), migrates it, seeds the default seats and serves. Throws on a store that cannot
 * be opened or migrated; stops what it started before it throws.
 */
export async function startGateway(config: Config, { logger, onQuery }: GatewayOptions): Promise<Gateway> {
  const jwt = config.jwt ? startJwtVerifier(config.jwt, logger) : undefined;
  const access = loadAccess(config.tokensFile, jwt);
  const natsUsers = loadNatsUsers(config.natsUsersFile);
  let host = config.host;
  if (access.open && !['127.0.0.1', 'localhost', '::1'].includes(host)) {
    logger.warn(
      { host },
      'no MESH_TOKENS_FILE nor MESH_JWKS_FILE/MESH_JWKS_URL: every caller would have every scope, so the gateway listens on 127.0.0.1 only',
    );
    host = '127.0.0.1';
  }
  const db: Store = await openStore({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    onQuery,
    onError: (err, sql) => {
      // An outage fails every statement: whoever meets it (a request, the ingest, the composer) logs it once, at warn.
      if (isStoreUnavailable(err)) return;
      // Crossed by another transaction: answered (a rename to a name just taken) or retried (the ingest), so a warning.
      if (isCrossedByAnother(err)) logger.warn({ err, sql }, 'SQL statement crossed by another transaction');
      else logger.error({ err, sql }, 'SQL statement failed');
    },
    onConnectionError: (err) => logger.warn({ err: String(err) }, 'a connection to the store failed'),
    onTransactionEndedIdle: () =>
      logger.warn(
        { idleMaxMs: STORE_IDLE_IN_TRANSACTION_MS },
        'PostgreSQL ended a transaction this replica left idle between statements: the replica was frozen or starved of CPU (the store itself is up); what it wrote is tried again',
      ),
  });
  const tokensWatch = watchTokensFile(access, logger);
  const natsUsersWatch = watchNatsUsersFile(natsUsers, logger);
  const stops: (() => Promise<void>)[] = [async () => tokensWatch.stop(), async () => natsUsersWatch.stop(), async () => jwt?.stop(), () => db.destroy()];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch((err) => logger.error({ err }, 'stopping'));
  };
  try {
    await waitForStore(db, (err, nextDelayMs, attempt) =>
      logger.warn({ err: String(err), attempt, nextDelayMs }, 'the store is unavailable: waiting before migrating'),
    );
    const migrations = await migrateToLatest(db);
    for (const m of migrations) logger.info({ migration: m.migrationName, status: m.status }, 'migration');
    const catalogue = compiledCatalogue(config.controller, CONTROLLER_VERBS);
    const seeded = await seedSeats(db, catalogue);
    logger.info({ ...seeded, store: config.databaseUrl ? 'postgres' : `pglite ${config.dataDir}/pg` }, 'seats seeded');
    const bus = await connectBus({
      natsUrl: config.natsUrl,
      user: config.natsUser,
      password: config.natsPassword,
      controller: config.controller,
      dataDir: config.dataDir,
      logger,
      name: `mesh-gateway ${config.replica}`,
    });
    stops.push(() => bus.close());
    // Without NATS_URL the NATS found (or the child started) is written down, so `npm run simulate` finds it.
    if (!config.natsUrl) stops.push(noteNatsUrl(config.dataDir, bus.url));
    const buckets = await ensureBuckets(bus.nc, bus.jsm, config.controller, logger, config.kvReplicas, config.kvWriteRetrySeconds * 1000);
    const views = { calls: await startCallView(buckets, bus.jsm, logger), handActs: await startHandActView(buckets, bus.jsm, logger) };
    stops.push(async () => (views.calls.stop(), views.handActs.stop()));
    // Every replica relays the outbox: the records of acts committed here or on a replica gone.
    const relay = startRecordRelay({ db, buckets, views, config, logger });
    stops.push(() => relay.stop());
    const leases = await startLeases({ db, buckets, views, config, logger }, bus.jsm);
    stops.push(() => leases.stop());
    // The replicas' shared key (made by the first to start): only the serving replica's status is taken.
    const replicaKeys = await startReplicaKeys(db, logger);
    stops.push(async () => replicaKeys.stop());
    const sealing = statusSeal({ replica: config.replica, keys: replicaKeys, leases, logger });
    const subjects = subjectsUnder(config.subjects);
    const statusStream = await ensureStatusStream(bus.jsm, config.controller, config.subjects, {
      historyHours: config.statusHistoryHours,
      replicas: config.kvReplicas,
      maxBytes: config.streamBytes.status,
      logger,
    });
    // The composer starts once the stream is read; until then a resync is asked over NATS.
    let composing: Composer | undefined;
    const status = startStatusFeed(bus.nc, subjects.status, logger, config.controller, {
      js: bus.js,
      jsm: bus.jsm,
      ...statusStream,
      // After a gap with no newer snapshot in the stream, the serving replica's next composition is one.
      askSnapshot: () => (composing ? composing.poke('resync') : bus.nc.publish(composeSubject(subjects.root), pokeBody(['resync']))),
      sealing,
    });
    stops.push(() => status.stop());
    const newsStream = await ensureNewsStream(bus.jsm, config.controller, config.subjects, logger, config.kvReplicas, config.streamBytes.news);
    const hearing = startNewsHearing({
      jsm: bus.jsm,
      nc: bus.nc,
      stream: newsStream.stream,
      logger,
      writtenThrough: () => newsWrittenThrough(db),
      follow: { js: bus.js, root: config.subjects, replayMs: hearingReplayMs(config.heartbeatSeconds) },
      checkpointMs: config.checkpointSeconds * 1000,
      // Each replica judges its partitions' news and sends the others their beats (issue 37).
      share: {
        nc: bus.nc,
        subject: hearingShareSubject(config.subjects),
        replica: config.replica,
        keys: replicaKeys,
        liveReplicas: () => leases.liveReplicas(),
      },
    });
    stops.push(async () => hearing.stop());
    await hearing.refresh();
    const statusCounts = startStatusCounts(status, { js: bus.js, stream: statusStream.stream }, config.statusHistoryHours * 3_600_000, logger);
    stops.push(async () => statusCounts.stop());
    const lookBack = status.history && startLookBackIndex(status, status.history, logger);
    stops.push(async () => lookBack?.stop());
    const events = new MeshEvents();
    const planChanges = startPlanChanges({ db, bus, subjects, events, logger });
    stops.push(async () => planChanges.stop());
    const mesh: Mesh = {
      config,
      db,
      bus,
      subjects,
      catalogue,
      logger,
      events,
      buckets,
      views,
      leases,
      replicaKeys,
      statusSeal: sealing,
      hearing,
      status,
      planChanges,
      statusCounts: statusCounts.series,
    };
    const responder = startResponder(mesh, natsUsers);
    stops.push(() => responder.stop());
    const pruning = startDurationPruning(mesh);
    const news = startNewsIngest(mesh, { js: bus.js, jsm: bus.jsm, stream: newsStream.stream, hearing });
    // Composing only once the stream is read: the first composition is then a delta from the last.
    await status.caughtUp();
    // Able to compose now (hearing rebuilt, status read): only now does this replica contend to serve.
    await leases.mayServe();
    const composer = startComposer(mesh);
    composing = composer;
    const applyTimeouts = startApplyTimeouts(mesh);
    const applyResends = startApplyResends(mesh);
    stops.push(
      async () => applyResends.stop(),
      () => pruning.stop(),
      () => news.stop(),
      () => composer.stop(),
      () => applyTimeouts.stop(),
    );
    const http = buildHttpApp({ schema, mesh, access, logger, observed: { composer, news, responder } });
    const url = await http.start(host, config.port);
    stops.push(() => http.stop());
    logger.info({ url, replica: config.replica }, 'serving GraphQL (GraphiQL in a browser at this address)');
    let stopping: Promise<void> | undefined;
    // Drain first: not ready, no new operation, in-flight requests and calls finish (up to MESH_DRAIN_S); then close.
    const stop = () =>
      (stopping ??= (async () => {
        http.drain.begin();
        logger.info({ inFlight: http.drain.inFlight(), drainSeconds: config.drainSeconds }, 'draining: not ready, taking no new operations');
        let timer: NodeJS.Timeout | undefined;
        const finished = await Promise.race([
          Promise.all([http.drain.idle(), responder.stop()]).then(() => true),
          new Promise<false>((resolve) => {
            timer = setTimeout(() => resolve(false), config.drainSeconds * 1000);
          }),
        ]);
        clearTimeout(timer);
        if (finished) logger.info('drained: nothing in flight');
        else logger.warn({ inFlight: http.drain.inFlight() }, 'drain time is up; closing with work in flight');
        await stopAll();
      })());
    return { url, mesh, http, news, composer, stop };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

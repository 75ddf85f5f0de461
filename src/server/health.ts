import { sql } from 'kysely';
import { NATS_OPEN_WARNING, natsOpenBehindClosedDoors } from '../services/access/open-nats.js';
import type { Mesh } from '../services/mesh.js';
import { COMPOSE_EVERY_MS } from '../services/status/composing/scheduler.js';

/** How long `/ready` waits for the store's `select 1` before it calls the store down. */
export const STORE_CHECK_TIMEOUT_MS = 1_000;
/** A replica is ready while it heard a composition within this long: twice the minute tick, so one missed tick is not an outage. */
export const COMPOSITION_STALE_MS = 2 * COMPOSE_EVERY_MS;
/**
 * A replica is ready while the news is written to within this long of now: past it the states it
 * shows are judged that far back (docs/status.md, "Behind"). Every replica reads the same stream,
 * so all of them pass or fail together: a balancer then keeps sending to all (it has no better
 * one), and the failing check is what an operator is paged on.
 */
export const NEWS_LAG_READY_MAX_MS = 60_000;
/** Store answers are reused this long, so a scraper and a balancer polling together send one `select 1`. */
const STORE_CHECK_REUSE_MS = 1_000;

/** One named check of `/ready`: whether it passes, and what it saw. */
export interface Check {
  ok: boolean;
  [detail: string]: unknown;
}

/**
 * What `/ready` and `/metrics` ask of the running gateway: does the store answer, is NATS
 * connected, and was a composition heard lately. NATS is followed by its status events; the time
 * a composition was heard is this replica's clock, so a serving replica's skewed clock does not
 * make every other replica unready.
 */
export interface Health {
  store(): Promise<Check>;
  nats(): Check;
  composition(): Check;
  /** Whether the news is written to within NEWS_LAG_READY_MAX_MS of now. */
  news(): Check;
  /** Every check by name. */
  checks(): Promise<Record<string, Check>>;
  stop(): void;
}

export function meshHealth(mesh: Pick<Mesh, 'db' | 'bus' | 'status' | 'hearing' | 'config'>): Health {
  const { nc } = mesh.bus;
  let natsConnected = !nc.isClosed();
  let natsChangedAt = Date.now();
  // A QueuedIterator underneath: stop() removes it from the connection's listeners.
  const statuses = nc.status() as ReturnType<typeof nc.status> & { stop?(): void };
  (async () => {
    for await (const status of statuses) {
      if (status.type === 'disconnect' || status.type === 'close') natsConnected = false;
      else if (status.type === 'reconnect') natsConnected = true;
      else continue;
      natsChangedAt = Date.now();
    }
  })().catch(() => undefined);

  let heardAt = mesh.status.current() ? Date.now() : undefined;
  const unsubscribe = mesh.status.subscribe(() => {
    heardAt = Date.now();
  });

  let lastStore: { at: number; check: Promise<Check> } | undefined;
  const pingStore = () => pingStoreOf(mesh.db);

  const health: Health = {
    store() {
      const now = Date.now();
      if (!lastStore || now - lastStore.at > STORE_CHECK_REUSE_MS) lastStore = { at: now, check: pingStore() };
      return lastStore.check;
    },
    // NATS open to anyone behind closed HTTP doors is said, not failed: the replica serves as well either way.
    nats: () => ({
      ok: natsConnected && !nc.isClosed(),
      server: nc.getServer(),
      sinceS: Math.round((Date.now() - natsChangedAt) / 1000),
      ...(natsOpenBehindClosedDoors(mesh.config, mesh.bus) && { open: true, warning: NATS_OPEN_WARNING }),
    }),
    composition() {
      const current = mesh.status.current();
      const ageMs = heardAt === undefined ? undefined : Date.now() - heardAt;
      return {
        ok: ageMs !== undefined && ageMs <= COMPOSITION_STALE_MS,
        seq: current?.seq ?? null,
        composedAt: current?.composedAt ?? null,
        heardAgoS: ageMs === undefined ? null : Math.round(ageMs / 100) / 10,
        limitS: COMPOSITION_STALE_MS / 1000,
      };
    },
    news() {
      const lagMs = mesh.hearing.lagMs();
      const heard = mesh.hearing.current();
      return {
        ok: lagMs <= NEWS_LAG_READY_MAX_MS,
        lagS: Math.round(lagMs / 100) / 10,
        pending: heard.pending,
        heardUntil: new Date(heard.heardUntilMs).toISOString(),
        writtenUntil: new Date(heard.writtenUntilMs).toISOString(),
        limitS: NEWS_LAG_READY_MAX_MS / 1000,
      };
    },
    async checks() {
      return { store: await health.store(), nats: health.nats(), composition: health.composition(), news: health.news() };
    },
    stop() {
      unsubscribe();
      statuses.stop?.();
    },
  };
  return health;
}

/** `select 1` on the store, within STORE_CHECK_TIMEOUT_MS: its time, or why it failed. */
async function pingStoreOf(db: Mesh['db']): Promise<Check> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      sql`select 1`.execute(db),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${STORE_CHECK_TIMEOUT_MS} ms`)), STORE_CHECK_TIMEOUT_MS);
      }),
    ]);
    return { ok: true, ms: Math.round((performance.now() - started) * 10) / 10 };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

import type { Subscription } from '@nats-io/transport-node';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { DB } from '../../store/tables.js';
import type { Composition, HolderStatus, MachineStatus, PlanStatus, RepeatedCauseStatus, SeatStatus, StatusFeed } from './composition.js';
import { countRunningCalls } from '../calls/records.js';
import { countHandActsThisWeek, HAND_ACT_WEEK_MS, repeatedCauses } from '../hand-acts/hand-acts.js';
import type { Leases } from '../replicas/leases.js';
import { machineState } from '../machines/machines.js';
import type { Mesh } from '../mesh.js';
import { byCode, listHoldings } from '../seats/seats.js';
import { publishComposition } from './feed.js';

type Db = Kysely<DB> | Transaction<DB>;

/** At most one composition starts per this many ms (4 a second) however much news arrives. */
export const COMPOSE_MIN_GAP_MS = 250;
/** The serving replica composes at least this often, so states by heartbeat age move without news. */
export const COMPOSE_EVERY_MS = 60_000;
/** Local triggers are gathered this long into one request to the serving replica. */
export const POKE_GATHER_MS = 10;

/** What a composition takes from outside the store: running calls and the week's hand-acts. */
export interface CompositionSources {
  callsRunning(): number | Promise<number>;
  handActsSince(since: Date): { count: number; repeatedCauses: RepeatedCauseStatus[] } | Promise<{ count: number; repeatedCauses: RepeatedCauseStatus[] }>;
}

/** The calls and hand-acts this replica's bucket views hold (kept by watches: no SQL, no round trip). */
export function meshSources(mesh: Mesh): CompositionSources {
  return {
    callsRunning: () => countRunningCalls(mesh),
    handActsSince: (since) => ({ count: countHandActsThisWeek(mesh, since.getTime() + HAND_ACT_WEEK_MS), repeatedCauses: repeatedCauses(mesh, since) }),
  };
}

/** What the composer needs of the serving lease (src/services/leases.ts). */
export type ServingLease = Pick<Leases, 'isServing' | 'onServingChange'>;

const iso = (d: Date | string | null): string | null => (d == null ? null : new Date(d).toISOString());
const readTiers = (value: unknown): string[][] => (typeof value === 'string' ? JSON.parse(value) : (value as string[][])) ?? [];

/** Plans not yet ended (QUEUED or OPEN), oldest first: what a dashboard shows as in progress. */
async function openPlans(db: Db): Promise<PlanStatus[]> {
  const rows = await db.selectFrom('plan').selectAll().where('state', 'in', ['QUEUED', 'OPEN']).orderBy('created_at').orderBy('id').execute();
  return rows.map((p) => ({
    id: p.id,
    seat: p.seat,
    build: p.build,
    state: p.state,
    tier: p.tier,
    tiers: readTiers(p.tiers),
    behind: p.behind,
    openedAt: iso(p.opened_at),
    endedAt: iso(p.ended_at),
  }));
}

export interface ComposeInput {
  seq: number;
  trigger: string;
  heartbeatSeconds: number;
  sources: CompositionSources;
}

/**
 * Every machine with its running modules, aggregated to one JSON value by Postgres: parsing one
 * value costs a fraction of parsing a row per machine. Modules are grouped in one pass over the
 * assignments (a join, not a lookup per machine), and both lists are sorted here, by code unit, as
 * holdings are: Postgres's collation costs more than the sort. Instants come back as ISO strings.
 */
async function machineRows(db: Db): Promise<{ name: string; site: string | null; lastHeardAt: string; modules: string[] }[]> {
  const { rows } = await sql<{ machines: [string, string | null, string, string[]][] }>`
    select coalesce(json_agg(json_build_array(m.name, m.site, m.last_heard_at, coalesce(a.modules, '[]'::json))), '[]'::json) as machines
      from machine m
      left join (select machine, json_agg(module) as modules from assignment where running group by machine) a on a.machine = m.name`.execute(db);
  return rows[0]!.machines
    .map(([name, site, lastHeardAt, modules]) => ({ name, site, lastHeardAt, modules: modules.sort() }))
    .sort((a, b) => byCode(a.name, b.name));
}

/**
 * Composes the whole mesh at one instant with four SQL statements whatever its size, on two
 * connections at once: machines with their running modules (each machine read once); and every
 * holding (`listHoldings`: recorded, else derived), seat names and open plans. Holdings are joined
 * to machines and seats in memory. The value is frozen.
 */
export async function compose(db: Kysely<DB>, input: ComposeInput): Promise<Composition> {
  const started = performance.now();
  const now = new Date();
  const [machines, { holdings, seats, plans }] = await Promise.all([
    db.connection().execute((conn) => machineRows(conn)),
    db.connection().execute(async (conn) => {
      return {
        holdings: await listHoldings(conn),
        seats: await conn.selectFrom('seat').select('name').orderBy('name').execute(),
        plans: await openPlans(conn),
      };
    }),
  ]);
  const callsRunning = await input.sources.callsRunning();
  const handActs = await input.sources.handActsSince(new Date(now.getTime() - HAND_ACT_WEEK_MS));
  const byMachine = new Map<string, MachineStatus['holdings']>();
  const bySeat = new Map<string, HolderStatus[]>();
  for (const h of holdings) {
    let ofMachine = byMachine.get(h.machine);
    if (!ofMachine) byMachine.set(h.machine, (ofMachine = []));
    ofMachine.push({ seat: h.seat, module: h.module, derived: h.derived });
    let ofSeat = bySeat.get(h.seat);
    if (!ofSeat) bySeat.set(h.seat, (ofSeat = []));
    ofSeat.push({ machine: h.machine, module: h.module, site: h.site, derived: h.derived });
  }
  const machineStatuses: MachineStatus[] = machines.map((m) => {
    const lastHeardAt = new Date(m.lastHeardAt);
    return {
      name: m.name,
      site: m.site,
      state: machineState(lastHeardAt, now, input.heartbeatSeconds),
      lastHeardAt: lastHeardAt.toISOString(),
      modules: m.modules,
      holdings: byMachine.get(m.name) ?? [],
    };
  });
  const seatStatuses: SeatStatus[] = seats.map(({ name }) => {
    const holders = bySeat.get(name) ?? [];
    return { name, held: holders.length > 0, holders };
  });
  return Object.freeze({
    seq: input.seq,
    composedAt: now.toISOString(),
    tookMs: Math.round((performance.now() - started) * 100) / 100,
    trigger: input.trigger,
    machines: machineStatuses,
    seats: seatStatuses,
    unheldSeats: seatStatuses.filter((s) => !s.held).map((s) => s.name),
    callsRunning,
    handActsThisWeek: handActs.count,
    repeatedCauses: handActs.repeatedCauses,
    plans,
  });
}

export interface ComposerStats {
  compositions: number;
  failures: number;
  lastTookMs: number | undefined;
  lastSeq: number;
}

export interface Composer {
  /** Asks for a composition on this replica (when it serves), coalesced with any already asked. */
  request(trigger: string): void;
  /** Asks the serving replica, wherever it is, for a composition (over `<subjects>.compose`). */
  poke(trigger: string): void;
  serving(): boolean;
  /** Whether a composition is being composed right now. */
  composing(): boolean;
  stats: ComposerStats;
  stop(): Promise<void>;
}

/** The last seq composed, kept in the leases bucket so the seq grows even after every replica stopped. */
export const SEQ_KEY = 'status-seq';

async function lastSeqKept(mesh: Mesh): Promise<number> {
  const entry = await mesh.buckets?.leases.get(SEQ_KEY);
  const seq = entry ? Number(entry.string()) : 0;
  return Number.isSafeInteger(seq) && seq > 0 ? seq : 0;
}

/** Where any replica asks the serving one for a composition: body `{"triggers":["news",…]}`. */
export const composeSubject = (root: string): string => `${root}.compose`;

/**
 * Runs the composer on every replica; only the holder of the serving lease composes. It composes
 * when it takes the lease (`start`, or `takeover` after another held it), when asked on
 * `<subjects>.compose` (every replica forwards its news, acting verbs and plan changes there),
 * and every COMPOSE_EVERY_MS. Requests are coalesced: at most one composition in flight, at most
 * one started per COMPOSE_MIN_GAP_MS, and the triggers gathered meanwhile make the next one's
 * trigger. The seq continues from the highest heard on `<subjects>.status` or kept under SEQ_KEY,
 * so it only grows, across replicas and across a stop of them all.
 */
export function startComposer(mesh: Mesh, deps: { feed?: StatusFeed; lease?: ServingLease; sources?: CompositionSources } = {}): Composer {
  const feed = deps.feed ?? mesh.status;
  const lease = deps.lease ?? mesh.leases;
  const sources = deps.sources ?? meshSources(mesh);
  const stats: ComposerStats = { compositions: 0, failures: 0, lastTookMs: undefined, lastSeq: 0 };
  const triggers = new Set<string>();
  let inFlight: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let lastStart = 0;
  let stopped = false;
  let composedOnce = false;

  const run = () => {
    const trigger = [...triggers].join(',');
    triggers.clear();
    lastStart = Date.now();
    composedOnce = true;
    let seq = 0;
    inFlight = lastSeqKept(mesh)
      .then((kept) => {
        seq = Math.max(stats.lastSeq, feed.current()?.seq ?? 0, kept) + 1;
        stats.lastSeq = seq;
        return compose(mesh.db, { seq, trigger, heartbeatSeconds: mesh.config.heartbeatSeconds, sources });
      })
      .then(async (composition) => {
        stats.compositions++;
        stats.lastTookMs = composition.tookMs;
        await publishComposition(mesh.bus.nc, mesh.subjects.status, composition);
        await mesh.buckets?.leases.put(SEQ_KEY, String(seq));
        mesh.logger.debug({ seq, trigger, tookMs: composition.tookMs, machines: composition.machines.length }, 'status composed');
      })
      .catch((err) => {
        stats.failures++;
        mesh.logger.error({ err, seq, trigger }, 'composing the status failed');
      })
      .finally(() => {
        inFlight = undefined;
        kick();
      });
  };

  const kick = () => {
    if (stopped || inFlight || timer || triggers.size === 0) return;
    if (!lease.isServing()) return triggers.clear();
    const wait = lastStart + COMPOSE_MIN_GAP_MS - Date.now();
    if (wait > 0) {
      timer = setTimeout(() => {
        timer = undefined;
        kick();
      }, wait);
      return;
    }
    run();
  };

  const request = (trigger: string) => {
    if (stopped || !lease.isServing()) return;
    triggers.add(trigger);
    kick();
  };

  const pokes = new Set<string>();
  let pokeTimer: NodeJS.Timeout | undefined;
  const poke = (trigger: string) => {
    if (stopped) return;
    pokes.add(trigger);
    pokeTimer ??= setTimeout(() => {
      pokeTimer = undefined;
      const body = JSON.stringify({ triggers: [...pokes] });
      pokes.clear();
      mesh.bus.nc.publish(composeSubject(mesh.subjects.root), body);
    }, POKE_GATHER_MS);
  };

  const pokeSub: Subscription = mesh.bus.nc.subscribe(composeSubject(mesh.subjects.root), {
    callback: (err, msg) => {
      if (err || !lease.isServing()) return;
      let asked: unknown;
      try {
        asked = msg.json<{ triggers?: unknown }>().triggers;
      } catch {
        asked = undefined;
      }
      const names = Array.isArray(asked) ? asked.filter((t): t is string => typeof t === 'string' && /^[a-z-]{1,40}$/.test(t)).slice(0, 10) : [];
      for (const t of names.length ? names : ['asked']) request(t);
    },
  });

  const onNews = (kind: 'machine' | 'build') => poke(kind === 'build' ? 'build' : 'news');
  const onActed = () => poke('acted');
  const onPlan = () => poke('plan');
  mesh.events.on('news', onNews);
  mesh.events.on('acted', onActed);
  mesh.events.on('plan-changed', onPlan);

  const took = (trigger: string) => {
    mesh.logger.info({ replica: mesh.config.replica, trigger }, 'took the serving lease: composing the status');
    request(trigger);
  };
  const offLease = lease.onServingChange((held) => {
    if (held) took(composedOnce || feed.current() ? 'takeover' : 'start');
    else {
      mesh.logger.warn({ replica: mesh.config.replica }, 'lost the serving lease: no longer composing');
      triggers.clear();
    }
  });
  if (lease.isServing()) took('start');
  // A replica that does not serve asks for a composition, so it has one to answer with.
  else poke('replica-joined');

  const minute = setInterval(() => request('minute'), COMPOSE_EVERY_MS);
  minute.unref();

  return {
    request,
    poke,
    serving: () => lease.isServing(),
    composing: () => inFlight !== undefined,
    stats,
    async stop() {
      stopped = true;
      clearInterval(minute);
      if (timer) clearTimeout(timer);
      if (pokeTimer) clearTimeout(pokeTimer);
      offLease();
      pokeSub.unsubscribe();
      mesh.events.off('news', onNews);
      mesh.events.off('acted', onActed);
      mesh.events.off('plan-changed', onPlan);
      await inFlight;
    },
  };
}

import { type Kysely, sql, type Transaction } from 'kysely';
import { byName } from '../../kernel/names.js';
import type { DB } from '../../store/tables.js';
import { type CallsMesh, countRunningCalls } from '../calls/records.js';
import { countHandActsThisWeek, HAND_ACT_WEEK_MS, type HandActLog, repeatedCauses } from '../hand-acts/hand-acts.js';
import { machineState } from '../machines/machines.js';
import { readTiers } from '../plans/plan.js';
import { listHoldings } from '../seats/holdings.js';
import type { Composition, HolderStatus, MachineStatus, PlanStatus, RepeatedCauseStatus, SeatStatus } from './composition.js';

type Db = Kysely<DB> | Transaction<DB>;

/** What a composition takes from outside the store: running calls and the week's hand-acts. */
export interface CompositionSources {
  callsRunning(): number | Promise<number>;
  handActsSince(since: Date): { count: number; repeatedCauses: RepeatedCauseStatus[] } | Promise<{ count: number; repeatedCauses: RepeatedCauseStatus[] }>;
}

/** The calls and hand-acts this replica's bucket views hold (kept by watches: no SQL, no round trip). */
export function meshSources(mesh: CallsMesh & HandActLog): CompositionSources {
  return {
    callsRunning: () => countRunningCalls(mesh),
    handActsSince: (since) => ({ count: countHandActsThisWeek(mesh, since.getTime() + HAND_ACT_WEEK_MS), repeatedCauses: repeatedCauses(mesh, since) }),
  };
}

const iso = (d: Date | string | null): string | null => (d == null ? null : new Date(d).toISOString());

/**
 * Plans not yet over (QUEUED, OPEN, or STOPPED until closed or resumed), oldest first: what a
 * dashboard shows as in progress or waiting for an operator.
 */
async function openPlans(db: Db): Promise<PlanStatus[]> {
  const rows = await db.selectFrom('plan').selectAll().where('state', 'in', ['QUEUED', 'OPEN', 'STOPPED']).orderBy('created_at').orderBy('id').execute();
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
    stopReason: p.stop_reason ?? null,
  }));
}

export interface ComposeInput {
  seq: number;
  /** The controller composing: a composition names it, so a replica can refuse another mesh's. */
  controller: string;
  /** The replica composing: it holds the controller's own seat while it serves. */
  servingReplica?: string;
  trigger: string;
  heartbeatSeconds: number;
  sources: CompositionSources;
}

/** The module a serving replica holds the controller's own seat as, in a composition. */
const GATEWAY_MODULE = 'mesh-gateway';

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
    .sort((a, b) => byName(a.name, b.name));
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
  // The controller's own seat is held by the replica composing, whatever the store records.
  if (input.servingReplica && !bySeat.get(input.controller)?.length) {
    bySeat.set(input.controller, [{ machine: input.servingReplica, module: GATEWAY_MODULE, site: null, derived: true }]);
  }
  const seatStatuses: SeatStatus[] = seats.map(({ name }) => {
    const holders = bySeat.get(name) ?? [];
    return { name, held: holders.length > 0, holders };
  });
  return Object.freeze({
    seq: input.seq,
    controller: input.controller,
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

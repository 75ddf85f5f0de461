import { type Kysely, sql } from 'kysely';
import { Pacer, pacedEach } from '../../../kernel/pacer.js';
import type { Db } from '../../../store/db.js';
import { byNameSql } from '../../../store/name-order.js';
import type { DB } from '../../../store/tables.js';
import { countRunningCalls } from '../../calls/reading.js';
import type { CallsMesh } from '../../calls/records.js';
import { countHandActsSince, HAND_ACT_WEEK_MS, type HandActLog, repeatedCauses } from '../../hand-acts/hand-acts.js';
import type { DeafSpan, Judging } from '../../machines/machines.js';
import { readTiers } from '../../plans/plan.js';
import { everyHoldingInParts } from '../../seats/holdings.js';
import type { Composition, PlanStatus, RepeatedCauseStatus } from '../composition.js';
import type { Held } from './holders.js';
import { type MachineRow, MeshView, type TouchedRow } from './incremental.js';

/** What a composition takes from outside the store: running calls and the week's hand-acts. */
export interface CompositionSources {
  callsRunning(): number | Promise<number>;
  handActsSince(since: Date): { count: number; repeatedCauses: RepeatedCauseStatus[] } | Promise<{ count: number; repeatedCauses: RepeatedCauseStatus[] }>;
}

/** The calls and hand-acts this replica's bucket views hold (kept by watches: no SQL, no round trip). */
export function meshSources(mesh: CallsMesh & HandActLog): CompositionSources {
  return {
    callsRunning: () => countRunningCalls(mesh),
    handActsSince: (since) => ({ count: countHandActsSince(mesh, since), repeatedCauses: repeatedCauses(mesh, since) }),
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
  /** The instant the composition is made; now when absent (a test composes two ways at one instant). */
  now?: Date;
  /**
   * The instant news is heard up to (src/services/news/hearing.ts), at which machines' states are
   * judged; `now` when absent (a gateway without a news stream, a test).
   */
  heardUntil?: Date;
  /** The spans the gateway could not hear (src/services/news/hearing.ts): not counted as machines' silence. */
  deaf?: readonly DeafSpan[];
  /**
   * The last composition shown (the feed's, whichever replica made it): a full composition never
   * shows a machine better than it did for the same last-heard instant (`flooredState`). With its
   * seats, a takeover at a large mesh starts from it (`composeFromShown`).
   */
  shown?: Pick<Composition, 'machines'> & Partial<Pick<Composition, 'seats'>>;
  /** When each machine was last heard, as this replica's memory holds it: the store keeps a checkpoint (issue 37). */
  heard?: {
    lastHeardAt(machine: string, storedIso: string): string;
    lastMs?(machine: string): number | undefined;
    forEachHeard?(visit: (machine: string, lastMs: number) => void, pacer: Pacer): Promise<void> | void;
  };
}

/** A full composition reads the machines in parts of this many (`machinesInParts`). */
export const MACHINE_PART_ROWS = 20_000;

/**
 * Every machine with its running modules, in name order (`collate "C"`, the order `byName` keeps,
 * sorted by PostgreSQL), from one statement answered in parts of MACHINE_PART_ROWS, each part
 * aggregated to one JSON value (parsing one value costs a fraction of parsing a row per machine)
 * and parsed as it arrives: the whole mesh in one value held the event loop for seconds to parse
 * at a million machines. Modules are grouped in one pass over the assignments (a join, not a lookup
 * per machine) and sorted here, by code unit. Instants come back as ISO strings.
 */
async function machinesInParts(db: Db, heard: ComposeInput['heard'], pacer: Pacer): Promise<MachineRow[]> {
  const { rows } = await sql<{ part: [string, string | null, string, string[]][] }>`
    select json_agg(json_build_array(name, site, last_heard_at, modules) order by k) as part
      from (select m.name, m.site, m.last_heard_at, coalesce(a.modules, '[]'::json) as modules, row_number() over (order by ${byNameSql('m.name')}) - 1 as k
              from machine m
              left join (select machine, json_agg(module) as modules from assignment where running group by machine) a on a.machine = m.name) numbered
     group by k / ${sql.lit(MACHINE_PART_ROWS)}
     order by k / ${sql.lit(MACHINE_PART_ROWS)}`.execute(db);
  const machines: MachineRow[] = [];
  for (const { part } of rows) {
    await pacedEach(part, pacer, ([name, site, lastHeardAt, modules]) => {
      machines.push({ name, site, lastHeardAt: heard?.lastHeardAt(name, lastHeardAt) ?? lastHeardAt, modules: modules.sort() });
    });
  }
  return machines;
}

/** Every holding as a composition shows it (`everyHoldingInParts`), in name order by seat, machine and module. */
async function heldInParts(db: Db, pacer: Pacer): Promise<Held[]> {
  const held: Held[] = [];
  for (const part of await everyHoldingInParts(db)) {
    await pacedEach(part, pacer, ([seat, machine, module, site, derived]) => {
      held.push({ seat, machine, module, site, derived });
    });
  }
  return held;
}

/**
 * The machines named, for an incremental composition, in one statement: each row with its running
 * modules and their claims and its holdings on record (index lookups per machine: the full
 * holdings query would hash every seat and holding however few machines are asked).
 */
async function touchedRows(db: Db, names: readonly string[], heard: ComposeInput['heard']): Promise<TouchedRow[]> {
  const { rows } = await sql<{ machines: [string, string | null, string, [string, string[]][] | null, [string, string][] | null][] }>`
    select coalesce(json_agg(json_build_array(m.name, m.site, m.last_heard_at, a.running, h.recorded)), '[]'::json) as machines
      from machine m
      left join lateral (select json_agg(json_build_array(x.module, x.claims)) as running from assignment x where x.machine = m.name and x.running) a on true
      left join lateral (select json_agg(json_build_array(r.seat, r.module)) as recorded from seat_holding r where r.machine = m.name) h on true
     where m.name = any(${[...names]}::text[])`.execute(db);
  return rows[0]!.machines.map(([name, site, lastHeardAt, running, recorded]) => ({
    name,
    site,
    lastHeardAt: heard?.lastHeardAt(name, lastHeardAt) ?? lastHeardAt,
    modules: (running ?? []).map(([module]) => module).sort(),
    claims: running ?? [],
    recorded: recorded ?? [],
  }));
}

/** A composition and the view of the mesh it was made from, for the next one to start from. */
export interface Composed {
  composition: Composition;
  view: MeshView;
}

/** The instant states are judged at: what is heard, never past the composition's own instant. */
const heardUntilMs = (input: ComposeInput, now: Date): number => Math.min(input.heardUntil?.getTime() ?? now.getTime(), now.getTime());
const judgingOf = (input: ComposeInput, now: Date): Judging => ({
  heardUntilMs: heardUntilMs(input, now),
  heartbeatSeconds: input.heartbeatSeconds,
  deaf: input.deaf,
});

/** The parts of a composition not kept in the view: open plans, calls and hand-acts, read again each time. */
async function finish(
  db: Db,
  view: MeshView,
  input: ComposeInput,
  now: Date,
  started: number,
  plans: PlanStatus[] | undefined,
  pacer: Pacer,
): Promise<Composition> {
  const openNow = plans ?? (await openPlans(db));
  const callsRunning = await input.sources.callsRunning();
  const handActs = await input.sources.handActsSince(new Date(now.getTime() - HAND_ACT_WEEK_MS));
  const seatStatuses = view.seats(input.controller, input.servingReplica);
  // Before tookMs: at a million machines the list's copy is most of an incremental composition.
  const machines = await view.machines(judgingOf(input, now), pacer);
  return Object.freeze({
    seq: input.seq,
    controller: input.controller,
    composedAt: now.toISOString(),
    tookMs: Math.round((performance.now() - started) * 100) / 100,
    trigger: input.trigger,
    heardUntil: new Date(heardUntilMs(input, now)).toISOString(),
    machines,
    seats: seatStatuses,
    unheldSeats: seatStatuses.filter((s) => !s.held).map((s) => s.name),
    callsRunning,
    handActsThisWeek: handActs.count,
    repeatedCauses: handActs.repeatedCauses,
    plans: openNow,
  });
}

/**
 * Composes the whole mesh at one instant with four SQL statements whatever its size, on two
 * connections at once: machines with their running modules (each machine read once); and every
 * holding (`everyHoldingInParts`: recorded, else derived), seat names and open plans, the first two
 * answered in parts. Holdings are joined to machines and seats in memory (`MeshView`), the loop
 * given its turns (`Pacer`). The value is frozen.
 */
export async function composeFully(db: Kysely<DB>, input: ComposeInput): Promise<Composed> {
  const started = performance.now();
  const now = input.now ?? new Date();
  const pacer = new Pacer();
  const [machines, { holdings, seats, plans }] = await Promise.all([
    db.connection().execute((conn) => machinesInParts(conn, input.heard, pacer)),
    db.connection().execute(async (conn) => {
      return {
        holdings: await heldInParts(conn, pacer),
        // With their aliases, which an incremental composition resolves claims by.
        seats: await conn
          .selectFrom('seat')
          .select(['name', sql<string[] | null>`(select json_agg(a.alias) from seat_alias a where a.seat = seat.name)`.as('aliases')])
          .orderBy(byNameSql('name'))
          .execute(),
        plans: await openPlans(conn),
      };
    }),
  ]);
  const view = await MeshView.of(
    machines,
    holdings,
    seats.map((s) => s.name),
    seats.flatMap((s) => (s.aliases ?? []).map((alias): [string, string] => [alias, s.name])),
    input.shown?.machines,
    pacer,
  );
  return { composition: await finish(db, view, input, now, started, plans, pacer), view };
}

/** The full composition alone (`composeFully`). */
export async function compose(db: Kysely<DB>, input: ComposeInput): Promise<Composition> {
  return (await composeFully(db, input)).composition;
}

/**
 * Composes from the view of the last composition: the machines `touched` are read again (rows,
 * running modules with their claims, holdings on record: one statement) beside the open plans
 * (one more, at once), their derived holdings worked out by the view, and swapped into it; every
 * other machine and seat is carried over, its state judged again at this instant; the machines
 * `heardLater` take their last-heard from memory. The view is changed in place.
 */
export async function composeIncrementally(
  db: Kysely<DB>,
  view: MeshView,
  touched: readonly string[],
  input: ComposeInput,
  heardLater: readonly string[] = [],
  pacer: Pacer = new Pacer(),
): Promise<Composition> {
  const started = performance.now();
  const now = input.now ?? new Date();
  // Machines only heard later (beats that changed nothing stored) take that instant from memory:
  // judged again with no read of the store. One the view does not hold yet comes with its news.
  for (const machine of heardLater) {
    const lastMs = input.heard?.lastMs?.(machine);
    if (lastMs !== undefined) view.hearLater(machine, lastMs);
  }
  // Machines about to be judged LATE or SILENT are read again too: news of them written since the
  // view read them may not have been told to the composer yet (docs/status.md, "Judging silence").
  const crossing = await view.crossingBy(judgingOf(input, now), pacer);
  const names = crossing.length ? [...new Set([...touched, ...crossing])] : touched;
  const [rows, plans] = await Promise.all([names.length ? touchedRows(db, names, input.heard) : [], openPlans(db)]);
  view.replaceTouched(names, rows);
  return finish(db, view, input, now, started, plans, pacer);
}

/** Past this many machines, a takeover starts from the composition it followed rather than from the whole store. */
export const TAKEOVER_FROM_SHOWN_MACHINES = 50_000;

/**
 * A takeover's composition at a large mesh, from the last composition this replica followed
 * (`shown`, made by the replica that served) instead of the whole store: tens of seconds at a
 * million machines (docs/status.md). A machine this replica heard later than `shown` shows takes
 * that instant from memory (at a steady mesh that is nearly every machine: reading them all again
 * would cost what a full read does); one it heard and `shown` does not show is read from the
 * store; every state is judged again, floored by what was shown. A change of site or modules
 * written after `shown` was composed, and what acting verbs changed meanwhile (seats, holdings on
 * record, aliases), are read by the reconciliation, due FULL_COMPOSE_EVERY_MS after. `whole` when
 * it read the whole store instead (a mesh coming up): then it was a full composition.
 */
export async function composeFromShown(
  db: Kysely<DB>,
  shown: Pick<Composition, 'machines' | 'seats'>,
  input: ComposeInput,
  readAtMost: (machines: number) => number,
): Promise<Composed & { whole: boolean }> {
  const pacer = new Pacer();
  const aliases = await db.selectFrom('seat_alias').select(['alias', 'seat']).execute();
  const view = await MeshView.fromComposition(
    shown,
    aliases.map((a): [string, string] => [a.alias, a.seat]),
    input.controller,
    pacer,
  );
  return composeCatchingUp(db, view, input, readAtMost, [], pacer);
}

/**
 * A composition from a view of the mesh that may be behind what this replica heard: every machine
 * heard later than the view holds takes that instant from memory, one it heard and the view does
 * not hold is read from the store, with the machines `asked` (news written since). A takeover's,
 * from the composition followed (`composeFromShown`); and the serving replica's own when it takes
 * the lease back in the term it lapsed in, from the view it held (no composition was asked of it
 * meanwhile). Past `readAtMost` machines to read, the whole store is read instead (`whole`).
 */
export async function composeCatchingUp(
  db: Kysely<DB>,
  view: MeshView,
  input: ComposeInput,
  readAtMost: (machines: number) => number,
  asked: readonly string[] = [],
  pacer = new Pacer(),
): Promise<Composed & { whole: boolean }> {
  const unshown = [...asked];
  await input.heard?.forEachHeard?.((machine, lastMs) => {
    if (!view.hearLater(machine, lastMs)) unshown.push(machine);
  }, pacer);
  // A mesh coming up (hundreds of thousands heard and not shown yet) costs less read whole.
  if (unshown.length > readAtMost(view.size)) return { ...(await composeFully(db, input)), whole: true };
  return { composition: await composeIncrementally(db, view, unshown, input, [], pacer), view, whole: false };
}

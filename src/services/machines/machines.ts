import { type Kysely, sql } from 'kysely';
import { byName, checkName } from '../../kernel/names.js';
import type { Db } from '../../store/db.js';
import { byNameSql } from '../../store/name-order.js';
import type { DB } from '../../store/tables.js';
import { type HeardOf, withHeard } from './heard.js';

export type MachineState = 'UP' | 'LATE' | 'SILENT';

/** A machine is LATE past 1.5 expected heartbeat intervals, SILENT past 6. */
export const LATE_AFTER_INTERVALS = 1.5;
export const SILENT_AFTER_INTERVALS = 6;

export interface Machine {
  name: string;
  site: string | null;
  firstHeardAt: Date;
  lastHeardAt: Date;
  heartbeats: number;
  /** The modules running on it, by name. */
  modules: string[];
}

/**
 * A time the gateway could not hear the mesh (its NATS connection was down: a NATS server
 * restarting, a network cut): beats sent then may be lost, so it does not count as silence.
 */
export interface DeafSpan {
  fromMs: number;
  toMs: number;
}

/** Whether two lists of deaf spans say the same (the hearing makes a new list at each read while NATS is away). */
export function sameDeafSpans(a: readonly DeafSpan[] | undefined, b: readonly DeafSpan[] | undefined): boolean {
  if (a === b) return true;
  const x = a ?? [];
  const y = b ?? [];
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (x[i]!.fromMs !== y[i]!.fromMs || x[i]!.toMs !== y[i]!.toMs) return false;
  return true;
}

/**
 * What a machine's state is judged against: `heardUntilMs`, the instant up to which all news is
 * heard (the news stream's watermark, src/services/news/hearing.ts), never the wall clock, and
 * the spans the gateway could not hear. A gateway behind on its news judges at the instant it has
 * heard up to, so its own lag never shows as the mesh's silence (docs/status.md).
 */
export interface Judging {
  heardUntilMs: number;
  heartbeatSeconds: number;
  /** Oldest first; empty or absent when the gateway heard throughout. */
  deaf?: readonly DeafSpan[];
}

/**
 * The heard instant a machine last heard at `lastHeardMs` has been silent `thresholdMs` for. A
 * deaf span that began before that does not count, and the machine gets a whole LATE threshold
 * after it ends (as Kubernetes measures grace from when it observed a node again): a beat lost
 * while the gateway could not hear is not the machine's silence.
 */
function silentFor(lastHeardMs: number, thresholdMs: number, judging: Judging): number {
  let at = lastHeardMs + thresholdMs;
  const graceMs = LATE_AFTER_INTERVALS * judging.heartbeatSeconds * 1000;
  for (const span of judging.deaf ?? []) {
    if (span.toMs <= lastHeardMs) continue;
    if (span.fromMs >= at) break;
    at = Math.max(at + (span.toMs - Math.max(span.fromMs, lastHeardMs)), span.toMs + graceMs);
  }
  return at;
}

/**
 * The one UP / LATE / SILENT rule: LATE once news heard past LATE_AFTER_INTERVALS expected beats
 * after its last one is heard and none of it was the machine's, SILENT past SILENT_AFTER_INTERVALS;
 * time the gateway could not hear does not count (`silentFor`). Every reader of state uses it:
 * compositions, `Machine.state`, `machines(state:)`, the crossing timer.
 */
export function machineState(lastHeardMs: number, judging: Judging): MachineState {
  const hb = judging.heartbeatSeconds * 1000;
  if (judging.heardUntilMs > silentFor(lastHeardMs, SILENT_AFTER_INTERVALS * hb, judging)) return 'SILENT';
  if (judging.heardUntilMs > silentFor(lastHeardMs, LATE_AFTER_INTERVALS * hb, judging)) return 'LATE';
  return 'UP';
}

/** States from best to worst, for comparing them. */
export const STATE_RANK: Record<MachineState, number> = { UP: 0, LATE: 1, SILENT: 2 };

/**
 * No outage raises the dead: a machine already shown LATE or SILENT for this very last-heard instant
 * stays at least so, whatever a deaf span learned later says; only news from it (a newer last-heard
 * instant) makes it better. `shown` is what the last composition showed of it (docs/status.md).
 */
export function flooredState(state: MachineState, lastHeardMs: number, shown: { state: MachineState; lastHeardMs: number } | undefined): MachineState {
  if (!shown || shown.lastHeardMs !== lastHeardMs) return state;
  return STATE_RANK[shown.state] > STATE_RANK[state] ? shown.state : state;
}

/**
 * The heard instant at which a machine last heard at `lastHeardMs` next changes state by age alone
 * (UP → LATE, LATE → SILENT), or undefined once it is SILENT. Its state changes once news heard up
 * to that instant is heard, not when the wall clock passes it.
 */
export function nextStateChangeMs(lastHeardMs: number, judging: Judging): number | undefined {
  const hb = judging.heartbeatSeconds * 1000;
  const late = silentFor(lastHeardMs, LATE_AFTER_INTERVALS * hb, judging);
  if (judging.heardUntilMs <= late) return late;
  const silent = silentFor(lastHeardMs, SILENT_AFTER_INTERVALS * hb, judging);
  return judging.heardUntilMs <= silent ? silent : undefined;
}

// Instants come as epoch milliseconds: a number per row instead of a timestamp text that the
// driver parses (issue 13's profile: parsing them was a twentieth of a nested read's time).
export function machineQuery(db: Db) {
  return db
    .selectFrom('machine as m')
    .select(['m.name', 'm.site', 'm.heartbeats'])
    .select(sql<number>`(extract(epoch from m.first_heard_at) * 1000)::float8`.as('first_heard_ms'))
    .select(sql<number>`(extract(epoch from m.last_heard_at) * 1000)::float8`.as('last_heard_ms'))
    .select(
      sql<
        string[]
      >`coalesce((select json_agg(a.module order by ${byNameSql('a.module')}) from assignment a where a.machine = m.name and a.running), '[]'::json)`.as(
        'modules',
      ),
    );
}

type MachineRow = Awaited<ReturnType<ReturnType<typeof machineQuery>['execute']>>[number];

export const toMachine = (row: MachineRow): Machine => ({
  name: row.name,
  site: row.site,
  firstHeardAt: new Date(Number(row.first_heard_ms)),
  lastHeardAt: new Date(Number(row.last_heard_ms)),
  heartbeats: Number(row.heartbeats),
  modules: typeof row.modules === 'string' ? JSON.parse(row.modules) : row.modules,
});

export interface MachineFilter {
  site?: string | null;
  /** Only machines in this state, as `machineState` judges them. */
  state?: { is: MachineState; judging: Judging } | null;
}

/** Every machine, by name; of one site and in one state when asked (judged at what `heard` holds). One statement. */
export async function listMachines(db: Db, filter: MachineFilter = {}, heard?: HeardOf): Promise<Machine[]> {
  let query = machineQuery(db).orderBy(byNameSql('m.name'));
  if (filter.site != null) query = query.where('m.site', '=', checkName(filter.site, 'site'));
  const machines = (await query.execute()).map((row) => withHeard(toMachine(row), heard));
  const state = filter.state;
  return state ? machines.filter((m) => machineState(m.lastHeardAt.getTime(), state.judging) === state.is) : machines;
}

/** The machines named, in the order asked, last heard as `heard` holds; undefined where none has that name. One statement. */
export async function machinesByNames(db: Db, names: readonly string[], heard?: HeardOf): Promise<(Machine | undefined)[]> {
  if (names.length === 0) return [];
  const rows = await machineQuery(db)
    .where(sql<boolean>`m.name = any(${[...new Set(names)]}::text[])`)
    .execute();
  const byName = new Map(rows.map((row) => [row.name, withHeard(toMachine(row), heard)]));
  return names.map((name) => byName.get(name));
}

/** One heartbeat as heard: the machine, its site, the modules it runs and what each claims. */
export interface Heartbeat {
  machine: string;
  site?: string | null;
  modules: string[];
  /** The seats each module's manifest claims, by module. */
  claims?: Record<string, string[]>;
  /** When the gateway heard it (the news stream stored it): its liveness is judged by this alone. */
  at: Date;
  /** When the agent says it sent it, by its own clock, never after `at`: information, never judged (docs/status.md). */
  sentAt?: Date;
}

export interface HeartbeatRecorded {
  machine: string;
  /** When the one before was heard; undefined for a machine heard the first time. */
  previousAt: Date | undefined;
  /** When a gateway wrote the one before, by its own clock; undefined when unknown. */
  previousWrittenAt: Date | undefined;
  at: Date;
}

/**
 * The seats a beat's module claims: its own entry only. A module named like a property every
 * object has (`constructor`, `toString`) read `Object.prototype`'s, a function, written as a null
 * the store refused: the whole beat was dropped as poison (found by the fuzzer).
 */
export const claimsOf = (beat: Heartbeat, module: string): readonly string[] =>
  beat.claims && Object.hasOwn(beat.claims, module) ? (beat.claims[module] ?? []) : [];

/**
 * Records heartbeats in one transaction: upserts each machine (site, last heard, count) and its
 * assignments (the modules listed run, with their claims; those not listed stop running).
 * Several beats of one machine in a batch count each, and the latest one's modules stand. A beat
 * heard before the machine's last one stored (delivered again, or overtaken) is counted and changes
 * nothing else: it must not roll its modules, and the holdings derived from them, back (docs/status.md).
 * Returns, for each beat recorded in time order, when the one before it was heard.
 */
export async function recordHeartbeats(db: Kysely<DB>, beats: readonly Heartbeat[]): Promise<HeartbeatRecorded[]> {
  if (beats.length === 0) return [];
  for (const beat of beats) {
    checkName(beat.machine, 'machine');
    if (beat.site != null) checkName(beat.site, 'site');
    for (const module of beat.modules) checkName(module, 'module');
  }
  // In name order, so two replicas writing overlapping batches lock rows in the same order.
  const names = [...new Set(beats.map((b) => b.machine))].sort(byName);
  // Arrays unnested by Postgres: one parameter per column however many machines, where a VALUES
  // list would take one per cell and a NOT IN list would nest past the parser's stack.
  // `for no key update`, the lock the upsert below takes anyway: it keeps two batches of one machine
  // in turn but, unlike `for update`, does not wait for a seat being held on the machine (holdSeat
  // key-share locks it against a forget, which still waits for this batch and this batch for it).
  return db.transaction().execute(async (tx) => {
    const before = await sql<{ name: string; last_heard_at: Date; written_at: Date | null }>`
      select name, last_heard_at, written_at from machine where name = any(${names}::text[]) order by ${byNameSql('name')} for no key update`.execute(tx);
    const previous = new Map(before.rows.map((b) => [b.name, new Date(b.last_heard_at)]));
    const written = new Map(before.rows.map((b) => [b.name, b.written_at ? new Date(b.written_at) : undefined]));
    const ordered = [...beats].sort((a, b) => a.at.getTime() - b.at.getTime());
    const latest = new Map<string, Heartbeat & { count: number; earliest: Date }>();
    for (const beat of ordered) {
      const seen = latest.get(beat.machine);
      latest.set(beat.machine, { ...beat, count: (seen?.count ?? 0) + 1, earliest: seen?.earliest ?? beat.at });
    }
    const rows = names.map((name) => latest.get(name)!);
    // Only a machine whose latest beat here is not older than the one stored has its site and
    // modules written: an old beat (delivered again, overtaken) is counted and changes nothing else.
    const isFresh = (r: Heartbeat) => !(r.at.getTime() < (previous.get(r.machine)?.getTime() ?? Number.NEGATIVE_INFINITY));
    const freshRows = rows.filter(isFresh);
    const fresh = freshRows.map((r) => r.machine);
    const assignments = freshRows.flatMap((r) => [...new Set(r.modules)].map((module) => ({ r, module })));
    const writtenAt = new Date().toISOString();
    await sql`
      insert into machine (name, site, first_heard_at, last_heard_at, heartbeats, written_at)
      select n, s, f, l, h, ${writtenAt}::timestamptz
        from unnest(${names}::text[], ${rows.map((r) => (isFresh(r) ? (r.site ?? null) : null))}::text[],
                    ${rows.map((r) => r.earliest.toISOString())}::timestamptz[],
                    ${rows.map((r) => r.at.toISOString())}::timestamptz[], ${rows.map((r) => r.count)}::int[]) as u(n, s, f, l, h)
      on conflict (name) do update set
        site = coalesce(excluded.site, machine.site),
        last_heard_at = greatest(excluded.last_heard_at, machine.last_heard_at),
        heartbeats = machine.heartbeats + excluded.heartbeats,
        written_at = excluded.written_at`.execute(tx);
    const machinesOf = assignments.map((a) => a.r.machine);
    const modulesOf = assignments.map((a) => a.module);
    if (assignments.length) {
      await sql`
        insert into assignment (machine, module, running, claims, since, heard_at)
        select machine, module, true, claims::jsonb, at, at
          from unnest(${machinesOf}::text[], ${modulesOf}::text[],
                      ${assignments.map((a) => JSON.stringify(claimsOf(a.r, a.module)))}::text[],
                      ${assignments.map((a) => a.r.at.toISOString())}::timestamptz[]) as u(machine, module, claims, at)
        on conflict (machine, module) do update set
          running = true,
          claims = excluded.claims,
          heard_at = excluded.heard_at,
          since = case when assignment.running then assignment.since else excluded.since end
        -- Most heartbeats repeat what is stored: leaving those rows unwritten is most of the speed.
        where not assignment.running or assignment.claims <> excluded.claims`.execute(tx);
    }
    await sql`
      update assignment a set running = false
       where a.machine = any(${fresh}::text[]) and a.running
         and not exists (select 1 from unnest(${machinesOf}::text[], ${modulesOf}::text[]) as r(machine, module)
                          where r.machine = a.machine and r.module = a.module)`.execute(tx);
    return ordered.map((beat) => {
      const previousAt = previous.get(beat.machine);
      const previousWrittenAt = written.get(beat.machine);
      previous.set(beat.machine, beat.at);
      written.set(beat.machine, new Date(writtenAt));
      return { machine: beat.machine, previousAt, previousWrittenAt, at: beat.at };
    });
  });
}

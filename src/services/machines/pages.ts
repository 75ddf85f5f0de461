import { type RawBuilder, sql } from 'kysely';
import { checkName } from '../../kernel/names.js';
import { type KeyPage, keyCursor, keyPageOf, type PageRequest } from '../../kernel/pages.js';
import type { Db } from '../../store/db.js';
import { nameStartsWithSql, pageByName } from '../../store/name-order.js';
import { withHeard } from './heard.js';
import { type Judging, type Machine, type MachineState, machineQuery, toMachine } from './machines.js';
import { heardAsShown, type MachineReading, type Shown, stateAsShown } from './shown.js';
import { heardBoundsOf } from './state-bounds.js';

export interface MachinePageFilter {
  site?: string | null;
  /** Only machines in this state, as `stateAsShown` judges them (the state `Machine.state` and `status` show). */
  state?: { is: MachineState; judging: Judging } | null;
  /** Only machines whose name starts with this (itself a name by the one rule). */
  nameStartsWith?: string | null;
}

const LIST = 'machines';

/**
 * Names read a statement while a state filter is judged in memory: a page of UP machines in a
 * healthy mesh takes one such statement; a rare state is sought chunk by chunk (bounded memory).
 */
export const STATE_SCAN_CHUNK = 2_000;

/** A machine's place in the list by name, as an opaque cursor. */
export const machineCursor = (machine: Machine): string => keyCursor(LIST, [machine.name]);

/** The site and name prefix of a filter, kept in SQL: one range of a name index. */
function placeConditions(filter: MachinePageFilter): RawBuilder<boolean>[] {
  const where: RawBuilder<boolean>[] = [];
  if (filter.site != null) where.push(sql<boolean>`m.site = ${checkName(filter.site, 'site')}`);
  if (filter.nameStartsWith != null) where.push(nameStartsWithSql('m.name', filter.nameStartsWith, 'nameStartsWith'));
  return where;
}

/**
 * The stored checkpoint a machine shown `is` must be older than, for SQL to leave out the rest; none
 * for UP. The checkpoint is never later than the machine's last-heard, and a state only worsens as
 * last-heard ages, so a machine judged `is` or worse — at this request's watermark, or shown so by a
 * composition judged no later than it was composed — was heard before the bound judged at the later
 * of the two instants with no deaf span (deaf spans only make states better). Necessary, not
 * sufficient: memory and the composition decide.
 */
function storedBefore(is: MachineState, judging: Judging, shown: Shown | undefined): number | undefined {
  if (is === 'UP') return undefined;
  const composedMs = shown ? Date.parse(shown.composedAt) : Number.NaN;
  const latest = {
    heardUntilMs: Math.max(judging.heardUntilMs, Number.isFinite(composedMs) ? composedMs : judging.heardUntilMs),
    heartbeatSeconds: judging.heartbeatSeconds,
  };
  const { beforeMs } = heardBoundsOf(is, latest);
  return beforeMs !== undefined && Number.isFinite(beforeMs) ? beforeMs : undefined;
}

/**
 * The names of the machines `state` holds, in name order from the page's cursors (from the end
 * when inverted), judged in memory as every reader shows them: the store's checkpoint (up to
 * MESH_CHECKPOINT_S old, issue 37) is only a pre-filter. Reads STATE_SCAN_CHUNK names a statement,
 * as many statements as it takes; the caller stops taking when it has enough.
 */
async function* namesInState(
  db: Db,
  filter: MachinePageFilter,
  state: { is: MachineState; judging: Judging },
  reading: MachineReading,
  page: Omit<KeyPage, 'limit'>,
): AsyncGenerator<string> {
  const heard = heardAsShown(reading);
  const before = storedBefore(state.is, state.judging, reading.shown);
  let query = db.selectFrom('machine as m').select('m.name').select(sql<number>`(extract(epoch from m.last_heard_at) * 1000)::float8`.as('last_heard_ms'));
  for (const condition of placeConditions(filter)) query = query.where(condition);
  if (before !== undefined) query = query.where(sql<boolean>`m.last_heard_at < ${new Date(before).toISOString()}::timestamptz`);
  let from = page;
  for (;;) {
    const rows = await pageByName(query, 'm.name', { ...from, limit: STATE_SCAN_CHUNK });
    for (const row of rows) {
      const machine = withHeard({ name: row.name, lastHeardAt: new Date(Number(row.last_heard_ms)) }, heard);
      if (stateAsShown(machine, state.judging, reading.shown) === state.is) yield row.name;
    }
    if (rows.length < STATE_SCAN_CHUNK) return;
    const last = [rows[rows.length - 1]!.name];
    from = page.inverted ? { ...from, before: last } : { ...from, after: last };
  }
}

/** The machines named, in that order, last heard as `heard` shows them; one forgotten since is left out. One statement. */
async function machinesInOrder(db: Db, names: readonly string[], reading: MachineReading): Promise<Machine[]> {
  if (names.length === 0) return [];
  const heard = heardAsShown(reading);
  const rows = await machineQuery(db)
    .where(sql<boolean>`m.name = any(${[...names]}::text[])`)
    .execute();
  const byName = new Map(rows.map((row) => [row.name, withHeard(toMachine(row), heard)]));
  return names.flatMap((name) => byName.get(name) ?? []);
}

/**
 * A page of machines by name (code-unit order) after or before a cursor, last-heard as every reader
 * shows it (`heardAsShown`). Without a state: one statement reading one range of the name index.
 * With one: the state `Machine.state` and `status` show (`stateAsShown`), judged in memory over the
 * names SQL leaves (`namesInState`), then the page's rows in one statement. Invalid for a cursor
 * not of this list, a name prefix or site that is not a name, or a page over NAME_PAGE_MAX.
 */
export async function pageMachines(db: Db, filter: MachinePageFilter, request: PageRequest, reading: MachineReading = {}): Promise<Machine[]> {
  const page = keyPageOf(LIST, 1, request, 'machines');
  const state = filter.state;
  if (state) {
    const names: string[] = [];
    if (page.limit > 0) {
      for await (const name of namesInState(db, filter, state, reading, page)) {
        names.push(name);
        if (names.length >= page.limit) break;
      }
    }
    return machinesInOrder(db, names, reading);
  }
  let query = machineQuery(db);
  for (const condition of placeConditions(filter)) query = query.where(condition);
  const heard = heardAsShown(reading);
  return (await pageByName(query, 'm.name', page)).map((row) => withHeard(toMachine(row), heard));
}

/**
 * How many machines the filter leaves, whatever the page. Without a state one statement; with one,
 * judged as the pages are (`namesInState`): a statement per STATE_SCAN_CHUNK names SQL leaves.
 */
export async function countMachines(db: Db, filter: MachinePageFilter, reading: MachineReading = {}): Promise<number> {
  const state = filter.state;
  if (state) {
    let n = 0;
    for await (const _ of namesInState(db, filter, state, reading, { inverted: false })) n++;
    return n;
  }
  let query = db.selectFrom('machine as m').select(sql<string>`count(*)`.as('n'));
  for (const condition of placeConditions(filter)) query = query.where(condition);
  return Number((await query.executeTakeFirstOrThrow()).n);
}

import { type RawBuilder, sql } from 'kysely';
import { checkName } from '../../kernel/names.js';
import { keyCursor, keyPageOf, type PageRequest } from '../../kernel/pages.js';
import type { Db } from '../../store/db.js';
import { nameStartsWithSql, pageByName } from '../../store/name-order.js';
import { type Judging, type Machine, type MachineState, machineQuery, toMachine } from './machines.js';
import { heardBoundsOf } from './state-bounds.js';

export interface MachinePageFilter {
  site?: string | null;
  /** Only machines in this state, as `machineState` judges them. */
  state?: { is: MachineState; judging: Judging } | null;
  /** Only machines whose name starts with this (itself a name by the one rule). */
  nameStartsWith?: string | null;
}

const LIST = 'machines';

/** A machine's place in the list by name, as an opaque cursor. */
export const machineCursor = (machine: Machine): string => keyCursor(LIST, [machine.name]);

function conditions(filter: MachinePageFilter): RawBuilder<boolean>[] {
  const where: RawBuilder<boolean>[] = [];
  if (filter.site != null) where.push(sql<boolean>`m.site = ${checkName(filter.site, 'site')}`);
  if (filter.nameStartsWith != null) where.push(nameStartsWithSql('m.name', filter.nameStartsWith, 'nameStartsWith'));
  if (filter.state) {
    const { fromMs, beforeMs } = heardBoundsOf(filter.state.is, filter.state.judging);
    if (fromMs !== undefined) where.push(sql<boolean>`m.last_heard_at >= ${new Date(fromMs).toISOString()}::timestamptz`);
    if (beforeMs !== undefined) where.push(sql<boolean>`m.last_heard_at < ${new Date(beforeMs).toISOString()}::timestamptz`);
  }
  return where;
}

/**
 * A page of machines by name (code-unit order) after or before a cursor, filtered in SQL: one
 * statement reading one range of the name index. Invalid for a cursor not of this list, a name
 * prefix or site that is not a name, or a page over NAME_PAGE_MAX.
 */
export async function pageMachines(db: Db, filter: MachinePageFilter, request: PageRequest): Promise<Machine[]> {
  const page = keyPageOf(LIST, 1, request, 'machines');
  let query = machineQuery(db);
  for (const condition of conditions(filter)) query = query.where(condition);
  return (await pageByName(query, 'm.name', page)).map(toMachine);
}

/** How many machines the filter leaves, whatever the page. One statement. */
export async function countMachines(db: Db, filter: MachinePageFilter): Promise<number> {
  let query = db.selectFrom('machine as m').select(sql<string>`count(*)`.as('n'));
  for (const condition of conditions(filter)) query = query.where(condition);
  return Number((await query.executeTakeFirstOrThrow()).n);
}

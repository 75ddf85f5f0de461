import { type RawBuilder, type SelectQueryBuilder, sql } from 'kysely';
import { checkName, prefixEnd } from '../kernel/names.js';
import type { KeyPage } from '../kernel/pages.js';

type Column = string | RawBuilder<unknown>;

/**
 * A name column as the mesh orders names: code-unit order, the order of `byName` in Node, whatever
 * the database's default collation (under ICU `en-US`, `a1` sorts before `Beta`; in code units
 * after it). The name rule (kernel/names.ts) allows ASCII letters, digits, '-' and '_' only, and on
 * ASCII the "C" collation compares bytes, which are the code units: so `collate "C"` is that order,
 * and the name indexes are built on it (`machine_name_c`, `seat_name_c`, … in migrations 0004, 0005).
 * Every ordering, range and comparison of names in SQL goes through this.
 */
export const byNameSql = (column: Column): RawBuilder<string> => sql<string>`${typeof column === 'string' ? sql.ref(column) : column} collate "C"`;

/** The names that start with `prefix` (itself a name, else Invalid naming `what`), as one range of a name index. */
export function nameStartsWithSql(column: Column, prefix: string, what: string): RawBuilder<boolean> {
  const from = checkName(prefix, what);
  const name = byNameSql(column);
  return sql<boolean>`${name} >= ${from} and ${name} < ${prefixEnd(from)}`;
}

/**
 * Reads one page of a list ordered by a name (machines, seats): the rows after or before the
 * page's cursors, in name order (from the end when `inverted`), `page.limit` at most. One range of
 * the name index, whatever the filters `query` already holds.
 */
export function pageByName<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>, column: string, page: KeyPage) {
  const name = byNameSql(column);
  let within = query;
  if (page.after) within = within.where(sql<boolean>`${name} > ${page.after[0]}`);
  if (page.before) within = within.where(sql<boolean>`${name} < ${page.before[0]}`);
  return within
    .orderBy(sql`${name} ${sql.raw(page.inverted ? 'desc' : 'asc')}`)
    .limit(page.limit)
    .execute();
}

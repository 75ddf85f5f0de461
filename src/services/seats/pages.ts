import { type RawBuilder, sql } from 'kysely';
import { checkName, prefixEnd } from '../../kernel/names.js';
import { keyCursor, keyPageOf, type PageRequest } from '../../kernel/pages.js';
import type { Catalogue } from './catalogue.js';
import type { Holding, HoldingFilter } from './holdings.js';
import { type Db, type Seat, seatQuery, toSeat } from './seats.js';

export interface SeatPageFilter {
  /** Only seats whose canonical name starts with this (itself a name by the one rule). */
  nameStartsWith?: string | null;
  /** Only seats with a holding, recorded or derived (true), or with none (false). */
  held?: boolean | null;
}

const SEATS = 'seats';
const HOLDINGS = 'holdings';

/** A seat's place in the list by name, as an opaque cursor. */
export const seatCursor = (seat: Seat): string => keyCursor(SEATS, [seat.name]);
/** A holding's place in the list by seat, machine and module, as an opaque cursor. */
export const holdingCursor = (h: Holding): string => keyCursor(HOLDINGS, [h.seat, h.machine, h.module]);

/** The names a running module's manifest may claim the seat `seat` by: its name and its aliases. */
const claimNames = (seat: RawBuilder<unknown>) => sql`(array[${seat}] || array(select d.alias from seat_alias d where d.seat = ${seat}))`;

// A seat is held when a holding is on record or a running module claims it by any of its names
// (then it is held by derivation, or on record already). The names claimed are read once a
// statement, from the distinct claim lists of running modules (a few, however many modules):
// one scan of the assignments, not one per seat.
const HELD = sql<boolean>`(exists (select 1 from seat_holding h where h.seat = seat.name)
  or seat.name in (select k.seat
                     from (select s2.name as key, s2.name as seat from seat s2 union all select d2.alias, d2.seat from seat_alias d2) k
                    where k.key in (select c.claim from (select distinct a.claims from assignment a where a.running) dc
                                      cross join lateral jsonb_array_elements_text(dc.claims) as c(claim))))`;

function seatConditions(filter: SeatPageFilter): RawBuilder<boolean>[] {
  const where: RawBuilder<boolean>[] = [];
  if (filter.nameStartsWith != null) {
    const from = checkName(filter.nameStartsWith, 'nameStartsWith');
    where.push(sql<boolean>`seat.name collate "C" >= ${from} and seat.name collate "C" < ${prefixEnd(from)}`);
  }
  if (filter.held != null) where.push(filter.held ? HELD : sql<boolean>`not ${HELD}`);
  return where;
}

/**
 * A page of seats by name (code-unit order) after or before a cursor. One statement. Invalid for a
 * cursor not of this list, a prefix that is not a name, or a page over NAME_PAGE_MAX.
 */
export async function pageSeats(db: Db, catalogue: Catalogue, filter: SeatPageFilter, request: PageRequest): Promise<Seat[]> {
  const page = keyPageOf(SEATS, 1, request, 'seats');
  const where = seatConditions(filter);
  if (page.after) where.push(sql<boolean>`seat.name collate "C" > ${page.after[0]}`);
  if (page.before) where.push(sql<boolean>`seat.name collate "C" < ${page.before[0]}`);
  let query = seatQuery(db, catalogue);
  for (const condition of where) query = query.where(condition);
  const rows = await query
    .orderBy(sql`seat.name collate "C" ${sql.raw(page.inverted ? 'desc' : 'asc')}`)
    .limit(page.limit)
    .execute();
  return rows.map((row) => toSeat(row, catalogue));
}

/** How many seats the filter leaves, whatever the page. One statement. */
export async function countSeats(db: Db, filter: SeatPageFilter): Promise<number> {
  let query = db.selectFrom('seat').select(sql<string>`count(*)`.as('n'));
  for (const condition of seatConditions(filter)) query = query.where(condition);
  return Number((await query.executeTakeFirstOrThrow()).n);
}

/**
 * The holdings asked, recorded and derived, as one statement's FROM (columns seat, scope, machine,
 * module, site, since, derived), each branch read in key order from its own index when `order`
 * and `limit` are given: the recorded by `seat_holding_key_c`, the derived seat by seat through
 * the claims' GIN index. The same holdings as `listHoldings` (a test holds them equal).
 */
function keyedRows(filter: HoldingFilter, page: { after?: readonly string[]; before?: readonly string[]; limit?: number; inverted?: boolean }) {
  const { seats, machines } = filter;
  const key = (seat: string, machine: string, module: string) =>
    sql`(${sql.raw(seat)} collate "C", ${sql.raw(machine)} collate "C", ${sql.raw(module)} collate "C")`;
  const bounds = (seat: string, machine: string, module: string) => {
    const k = key(seat, machine, module);
    const after = page.after ? sql`and ${k} > (${page.after[0]}, ${page.after[1]}, ${page.after[2]})` : sql``;
    const before = page.before ? sql`and ${k} < (${page.before[0]}, ${page.before[1]}, ${page.before[2]})` : sql``;
    return sql`${after} ${before}`;
  };
  const way = sql.raw(page.inverted ? 'desc' : 'asc');
  const order = (seat: string, machine: string, module: string) =>
    page.limit === undefined
      ? sql``
      : sql`order by ${sql.raw(seat)} collate "C" ${way}, ${sql.raw(machine)} collate "C" ${way}, ${sql.raw(module)} collate "C" ${way} limit ${page.limit}`;
  return sql`
    (select h.seat, h.scope, h.machine, h.module, m.site, h.since, false as derived
       from seat_holding h join machine m on m.name = h.machine
      where true ${seats ? sql`and h.seat = any(${[...seats]}::text[])` : sql``} ${machines ? sql`and h.machine = any(${[...machines]}::text[])` : sql``}
            ${bounds('h.seat', 'h.machine', 'h.module')}
      ${order('h.seat', 'h.machine', 'h.module')})
    union all
    (select s.name as seat, s.scope, a.machine, a.module, m.site, a.since, true as derived
       from seat s
       join assignment a on a.running and a.claims ?| ${claimNames(sql`s.name`)}
       join machine m on m.name = a.machine
      where not exists (select 1 from seat_holding r where r.seat = s.name)
            ${seats ? sql`and s.name = any(${[...seats]}::text[])` : sql``} ${machines ? sql`and a.machine = any(${[...machines]}::text[])` : sql``}
            ${bounds('s.name', 'a.machine', 'a.module')}
      ${order('s.name', 'a.machine', 'a.module')})`;
}

/**
 * A page of holdings, recorded and derived, by seat, machine and module (code-unit order) after or
 * before a cursor; of the seats and machines named (canonical) when given. One statement.
 */
export async function pageHoldings(db: Db, filter: HoldingFilter, request: PageRequest): Promise<Holding[]> {
  const page = keyPageOf(HOLDINGS, 3, request, 'holdings');
  if (filter.seats?.length === 0 || filter.machines?.length === 0) return [];
  const way = sql.raw(page.inverted ? 'desc' : 'asc');
  const result = await sql<Omit<Holding, 'since'> & { since: Date | string }>`
    select held.seat, held.scope, held.machine, held.module, held.site, held.since, held.derived
      from (${keyedRows(filter, page)}) held
     order by held.seat collate "C" ${way}, held.machine collate "C" ${way}, held.module collate "C" ${way}
     limit ${page.limit}`.execute(db);
  return result.rows.map((row) => ({ ...row, since: new Date(row.since) }));
}

/** How many holdings the filter leaves, whatever the page. One statement. */
export async function countHoldings(db: Db, filter: HoldingFilter): Promise<number> {
  if (filter.seats?.length === 0 || filter.machines?.length === 0) return 0;
  const result = await sql<{ n: string }>`select count(*) as n from (${keyedRows(filter, {})}) held`.execute(db);
  return Number(result.rows[0]!.n);
}

import { type RawBuilder, sql } from 'kysely';
import { keyCursor, keyPageOf, type PageRequest } from '../../kernel/pages.js';
import type { Db } from '../../store/db.js';
import { byNameSql, nameStartsWithSql, pageByName } from '../../store/name-order.js';
import type { Catalogue } from './catalogue.js';
import type { Holding, HoldingFilter } from './holdings.js';
import { SEAT_NAMES, type Seat, seatQuery, toSeat } from './seats.js';

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

// A seat is held when a holding is on record (`held_on_record`, kept by a trigger) or a running
// module claims it by any of its names (`assignment_claim`, the running modules' claims by name):
// two index probes a seat, and the unheld seats are read from the partial index of seats with
// nothing on record (migrations/0005_claims_by_name.ts). Each probe is ordered as the index is: where one name is
// claimed by most modules, the statistics say any claim matches most rows, and PostgreSQL would
// otherwise probe with a scan of every claim (3 ms a seat at 100,000 machines); a scalar subquery,
// because PostgreSQL drops the order and limit of an EXISTS.
const claimedBy = (name: RawBuilder<unknown>) =>
  sql<boolean>`(select true from assignment_claim c where c.claim = ${name} order by c.claim, ${byNameSql('c.machine')}, ${byNameSql('c.module')} limit 1) is not null`;
const CLAIMED = sql<boolean>`(${claimedBy(sql`seat.name`)}
  or exists (select 1 from seat_alias d where d.seat = seat.name and ${claimedBy(sql`d.alias`)}))`;
const HELD = sql<boolean>`(seat.held_on_record or ${CLAIMED})`;
const UNHELD = sql<boolean>`not seat.held_on_record and not ${CLAIMED}`;

function seatConditions(filter: SeatPageFilter): RawBuilder<boolean>[] {
  const where: RawBuilder<boolean>[] = [];
  if (filter.nameStartsWith != null) where.push(nameStartsWithSql('seat.name', filter.nameStartsWith, 'nameStartsWith'));
  if (filter.held != null) where.push(filter.held ? HELD : UNHELD);
  return where;
}

/**
 * A page of seats by name (code-unit order) after or before a cursor. One statement. Invalid for a
 * cursor not of this list, a prefix that is not a name, or a page over NAME_PAGE_MAX.
 */
export async function pageSeats(db: Db, catalogue: Catalogue, filter: SeatPageFilter, request: PageRequest): Promise<Seat[]> {
  const page = keyPageOf(SEATS, 1, request, 'seats');
  let query = seatQuery(db, catalogue);
  for (const condition of seatConditions(filter)) query = query.where(condition);
  return (await pageByName(query, 'seat.name', page)).map((row) => toSeat(row, catalogue));
}

/** How many seats the filter leaves, whatever the page. One statement. */
export async function countSeats(db: Db, filter: SeatPageFilter): Promise<number> {
  let query = db.selectFrom('seat').select(sql<string>`count(*)`.as('n'));
  for (const condition of seatConditions(filter)) query = query.where(condition);
  return Number((await query.executeTakeFirstOrThrow()).n);
}

/** A name after every name in code-unit order: the open end of a key range. */
const AFTER_EVERY_NAME = '\u{10FFFF}';

/** Where a page's rows start and end, as keys (seat, machine, module) read from its cursors. */
interface KeyRange {
  after?: readonly string[];
  before?: readonly string[];
  limit: number;
  inverted?: boolean;
}

/**
 * A seat's derived holders within the page's range, in (machine, module) order, at most `limit`:
 * one range of `assignment_claim_key_c` for the seat's name and one for each alias, merged. The
 * range's ends bound the seat named in the cursor only, and are index conditions, so a page from
 * the middle of a seat claimed 100,000 times starts where the cursor points.
 */
function claimantsOf(range: KeyRange) {
  const { after, before, limit } = range;
  const way = sql.raw(range.inverted ? 'desc' : 'asc');
  const within = (claim: RawBuilder<unknown>) => sql`ac.claim = ${claim}
      ${after ? sql`and (${byNameSql('ac.machine')}, ${byNameSql('ac.module')}) > (case when s.name = ${after[0]} then ${after[1]} else '' end, case when s.name = ${after[0]} then ${after[2]} else '' end)` : sql``}
      ${before ? sql`and (${byNameSql('ac.machine')}, ${byNameSql('ac.module')}) < (case when s.name = ${before[0]} then ${before[1]} else ${AFTER_EVERY_NAME} end, case when s.name = ${before[0]} then ${before[2]} else ${AFTER_EVERY_NAME} end)` : sql``}`;
  const ordered = sql`order by ${byNameSql('ac.machine')} ${way}, ${byNameSql('ac.module')} ${way} limit ${limit}`;
  return sql`(select u.machine, u.module from (
      (select ac.machine, ac.module from assignment_claim ac where ${within(sql`s.name`)} ${ordered})
      union
      (select x.machine, x.module from seat_alias d
         cross join lateral (select ac.machine, ac.module from assignment_claim ac where ${within(sql`d.alias`)} ${ordered}) x
        where d.seat = s.name)) u
    order by ${byNameSql('u.machine')} ${way}, ${byNameSql('u.module')} ${way} limit ${limit})`;
}

/**
 * The holdings asked, recorded and derived, as one statement's FROM (columns seat, scope, machine,
 * module, site, since, derived), each branch read in key order from indexes and stopping at the
 * page: the recorded by `seat_holding_key_c`; the derived seat by seat from the seats
 * with nothing on record (`seat_unrecorded_name_c`), each seat's claimants by `claimantsOf`. Of the
 * machines named, the derived are read from those machines' claims instead. The same holdings as
 * `listHoldings` (a test holds them equal).
 */
function keyedRows(filter: HoldingFilter, range: KeyRange) {
  const { seats, machines } = filter;
  const key = (seat: string, machine: string, module: string) => sql`(${byNameSql(seat)}, ${byNameSql(machine)}, ${byNameSql(module)})`;
  const bounds = (seat: string, machine: string, module: string) => {
    const k = key(seat, machine, module);
    const after = range.after ? sql`and ${k} > (${range.after[0]}, ${range.after[1]}, ${range.after[2]})` : sql``;
    const before = range.before ? sql`and ${k} < (${range.before[0]}, ${range.before[1]}, ${range.before[2]})` : sql``;
    return sql`${after} ${before}`;
  };
  const way = sql.raw(range.inverted ? 'desc' : 'asc');
  const order = (seat: string, machine: string, module: string) =>
    sql`order by ${byNameSql(seat)} ${way}, ${byNameSql(machine)} ${way}, ${byNameSql(module)} ${way} limit ${range.limit}`;
  const recorded = sql`
    (select h.seat, h.scope, h.machine, h.module, m.site, h.since, false as derived
       from seat_holding h join machine m on m.name = h.machine
      where true ${seats ? sql`and h.seat = any(${[...seats]}::text[])` : sql``} ${machines ? sql`and h.machine = any(${[...machines]}::text[])` : sql``}
            ${bounds('h.seat', 'h.machine', 'h.module')}
      ${order('h.seat', 'h.machine', 'h.module')})`;
  // A module claiming a seat by two of its names is one holder (`distinct`).
  const derived = machines
    ? sql`
    (select * from (select distinct s.name as seat, s.scope, a.machine, a.module, m.site, a.since, true as derived
       from assignment_claim ac
       join ${SEAT_NAMES} k on k.key = ac.claim
       join seat s on s.name = k.seat
       join assignment a on a.machine = ac.machine and a.module = ac.module
       join machine m on m.name = a.machine
      where not s.held_on_record
            ${seats ? sql`and s.name = any(${[...seats]}::text[])` : sql``} and ac.machine = any(${[...machines]}::text[])
            ${bounds('s.name', 'a.machine', 'a.module')}) d
      ${order('d.seat', 'd.machine', 'd.module')})`
    : sql`
    (select s.name as seat, s.scope, c.machine, c.module, m.site, a.since, true as derived
       from seat s
       cross join lateral ${claimantsOf(range)} c
       join assignment a on a.machine = c.machine and a.module = c.module
       join machine m on m.name = a.machine
      where not s.held_on_record
            ${seats ? sql`and s.name = any(${[...seats]}::text[])` : sql``}
            ${range.after ? sql`and ${byNameSql('s.name')} >= ${range.after[0]}` : sql``}
            ${range.before ? sql`and ${byNameSql('s.name')} <= ${range.before[0]}` : sql``}
      ${order('s.name', 'c.machine', 'c.module')})`;
  return sql`${recorded} union all ${derived}`;
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
     order by ${byNameSql('held.seat')} ${way}, ${byNameSql('held.machine')} ${way}, ${byNameSql('held.module')} ${way}
     limit ${page.limit}`.execute(db);
  return result.rows.map((row) => ({ ...row, since: new Date(row.since) }));
}

/**
 * How many holdings the filter leaves, whatever the page. One statement, counting keys only: a
 * holding on record has its assignment and machine (foreign keys), and a claim kept by name its
 * running assignment, so neither is joined to be counted. A derived holder is counted once: by the
 * seat's own name, else by the distinct (machine, module) of its aliases' claims (few), so the
 * 100,000 claims of one name are counted, never de-duplicated (BENCHMARKS.md, at 100,000 machines).
 */
export async function countHoldings(db: Db, filter: HoldingFilter): Promise<number> {
  const { seats, machines } = filter;
  if (seats?.length === 0 || machines?.length === 0) return 0;
  const ofSeats = (column: string) => (seats ? sql`and ${sql.ref(column)} = any(${[...seats]}::text[])` : sql``);
  const ofMachines = (column: string) => (machines ? sql`and ${sql.ref(column)} = any(${[...machines]}::text[])` : sql``);
  const result = await sql<{ n: string }>`
    select (select count(*) from seat_holding h where true ${ofSeats('h.seat')} ${ofMachines('h.machine')})
         + (select count(*) from assignment_claim ac join seat s on s.name = ac.claim
             where not s.held_on_record ${ofSeats('s.name')} ${ofMachines('ac.machine')})
         + (select count(*) from (
              select distinct s.name, ac.machine, ac.module
                from seat_alias d
                join seat s on s.name = d.seat
                join assignment_claim ac on ac.claim = d.alias
               where not s.held_on_record ${ofSeats('s.name')} ${ofMachines('ac.machine')}
                 and not exists (select 1 from assignment_claim own
                                  where own.claim = s.name and own.machine = ac.machine and own.module = ac.module)) by_alias) as n`.execute(db);
  return Number(result.rows[0]!.n);
}

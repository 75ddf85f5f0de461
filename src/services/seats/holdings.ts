import { type Kysely, sql } from 'kysely';
import { Conflict, NotFound } from '../../kernel/errors.js';
import { byName, checkName } from '../../kernel/names.js';
import { freeText } from '../../kernel/values.js';
import type { Db } from '../../store/db.js';
import { byNameSql } from '../../store/name-order.js';
import type { DB } from '../../store/tables.js';
import type { Catalogue } from './catalogue.js';
import { SEAT_SCOPE_MAX } from './define.js';
import { lockSeat, SEAT_NAMES, type Seat, seatByName } from './seats.js';

export interface Holding {
  seat: string;
  scope: string;
  machine: string;
  module: string;
  site: string | null;
  since: Date;
  /** Held because a running module's manifest claims the seat, not on record. */
  derived: boolean;
}

export interface HoldingFilter {
  seats?: readonly string[];
  machines?: readonly string[];
}

/**
 * The holdings of the seats and machines asked (all where a filter is absent): the recorded ones,
 * and for a seat with none on record, every running module whose manifest claims it or one of its
 * aliases, marked derived. Seat names here are canonical. One statement, answered as one JSON
 * value: parsing one value costs a fraction of parsing a row per holding, at 20,000 holdings.
 */
export async function listHoldings(db: Db, filter: HoldingFilter = {}): Promise<Holding[]> {
  const { seats, machines } = filter;
  if (seats?.length === 0 || machines?.length === 0) return [];
  const result = await sql<{ holdings: [string, string, string, string, string | null, string, boolean][] | string }>`
    select coalesce(json_agg(json_build_array(seat, scope, machine, module, site, since, derived)), '[]'::json) as holdings
      from ${heldSql(filter)} held`.execute(db);
  const raw = result.rows[0]!.holdings;
  const rows = typeof raw === 'string' ? (JSON.parse(raw) as Exclude<typeof raw, string>) : raw;
  return rows
    .map(([seat, scope, machine, module, site, since, derived]) => ({ seat, scope, machine, module, site, since: new Date(since), derived }))
    .sort((a, b) => byName(a.seat, b.seat) || byName(a.machine, b.machine) || byName(a.module, b.module));
}

/**
 * The holdings asked, as a subquery: recorded and derived holdings never share a seat, so `union
 * all`; a module claiming a seat by two of its names is one holder (`distinct`).
 */
function heldSql(filter: HoldingFilter) {
  const { seats, machines } = filter;
  // One array parameter per list, not one parameter per name: thousands of names planned as an
  // IN list cost PostgreSQL more than the read itself (issue 13).
  const recordedSeat = seats ? sql`and h.seat = any(${[...seats]}::text[])` : sql``;
  const recordedMachine = machines ? sql`and h.machine = any(${[...machines]}::text[])` : sql``;
  const derivedSeat = seats ? sql`and k.seat = any(${[...seats]}::text[])` : sql``;
  const derivedMachine = machines ? sql`and a.machine = any(${[...machines]}::text[])` : sql``;
  return sql`(
        select h.seat, h.scope, h.machine, h.module, m.site, h.since, false as derived
          from seat_holding h join machine m on m.name = h.machine
         where true ${recordedSeat} ${recordedMachine}
        union all
        select distinct k.seat, s.scope, a.machine, a.module, m.site, a.since, true as derived
          from assignment a
          join machine m on m.name = a.machine
          cross join lateral jsonb_array_elements_text(a.claims) as c(claim)
          join ${SEAT_NAMES} k on k.key = c.claim
          join seat s on s.name = k.seat
         where a.running
           and not exists (select 1 from seat_holding r where r.seat = k.seat)
           ${derivedSeat} ${derivedMachine}
      )`;
}

/** `everyHoldingInParts` answers this many holdings a part. */
export const HOLDINGS_PART_ROWS = 20_000;

/** A holding as a composition shows it: seat, machine, module, the machine's site, derived or on record. */
export type HolderRow = [seat: string, machine: string, module: string, site: string | null, derived: boolean];

/**
 * Every holding (`listHoldings` without a filter) in name order by seat, machine and module, sorted
 * by PostgreSQL, in parts of HOLDINGS_PART_ROWS: one statement whose rows are parts, each part's
 * JSON parsed as it arrives. At a million machines the whole mesh's holdings in one value held the
 * event loop for seconds to parse, and as long again to sort.
 */
export async function everyHoldingInParts(db: Db): Promise<HolderRow[][]> {
  const { rows } = await sql<{ part: HolderRow[] }>`
    select json_agg(json_build_array(seat, machine, module, site, derived) order by k) as part
      from (select held.*, row_number() over (order by ${byNameSql('seat')}, ${byNameSql('machine')}, ${byNameSql('module')}) - 1 as k
              from ${heldSql({})} held) numbered
     group by k / ${sql.lit(HOLDINGS_PART_ROWS)}
     order by k / ${sql.lit(HOLDINGS_PART_ROWS)}`.execute(db);
  return rows.map((row) => row.part);
}

interface HolderRequest {
  seat: string;
  machine: string;
  module: string;
  scope?: string | null;
}

/**
 * Checks names, resolves the seat and proves the module runs on the machine. The machine and its
 * assignment are key-share locked, as forgetMachine's delete needs them: a forget in flight commits
 * first and the machine is NotFound here (unlocked, the holding's insert failed on its foreign key,
 * an INTERNAL), or this holding commits first and the forget is refused because of it.
 */
async function judgeHolder(tx: Db, catalogue: Catalogue, request: HolderRequest): Promise<Seat> {
  checkName(request.seat, 'seat');
  checkName(request.machine, 'machine');
  checkName(request.module, 'module');
  freeText(request.scope, 'scope', SEAT_SCOPE_MAX);
  const seat = await seatByName(tx, catalogue, request.seat);
  const machine = await tx.selectFrom('machine').select('name').where('name', '=', request.machine).forKeyShare().executeTakeFirst();
  if (!machine) throw new NotFound('machine', request.machine);
  const assignment = await tx
    .selectFrom('assignment')
    .select('running')
    .where('machine', '=', request.machine)
    .where('module', '=', request.module)
    .forKeyShare()
    .executeTakeFirst();
  if (!assignment?.running) {
    throw new Conflict(`module ${JSON.stringify(request.module)} is not running on machine ${JSON.stringify(request.machine)}`);
  }
  return seat;
}

/**
 * Makes one running module the seat's only holder, replacing every other, in one transaction so
 * the seat is never without a holder in between.
 */
export async function holdSeat(db: Kysely<DB>, catalogue: Catalogue, request: HolderRequest): Promise<Holding[]> {
  const seat = await db.transaction().execute(async (tx) => {
    await lockSeat(tx, checkName(request.seat, 'seat'));
    const seat = await judgeHolder(tx, catalogue, request);
    await tx
      .deleteFrom('seat_holding')
      .where('seat', '=', seat.name)
      .where((eb) => eb.not(eb.and([eb('machine', '=', request.machine), eb('module', '=', request.module)])))
      .execute();
    await tx
      .insertInto('seat_holding')
      .values({ seat: seat.name, machine: request.machine, module: request.module, scope: request.scope ?? seat.scope })
      .onConflict((oc) => oc.columns(['seat', 'machine', 'module']).doUpdateSet({ scope: request.scope ?? seat.scope, since: sql`now()` }))
      .execute();
    return seat;
  });
  return listHoldings(db, { seats: [seat.name] });
}

/**
 * Adds a holder beside those on record, for a replicated seat only; holding it already changes
 * nothing. The seat is locked first, as holdSeat locks it: a retirement or rename in flight commits
 * first and is seen (unlocked, the insert failed on the seat's foreign key, an INTERNAL).
 */
export async function addSeatHolder(db: Kysely<DB>, catalogue: Catalogue, request: HolderRequest): Promise<Holding[]> {
  const seat = await db.transaction().execute(async (tx) => {
    await lockSeat(tx, checkName(request.seat, 'seat'));
    const seat = await judgeHolder(tx, catalogue, request);
    if (!seat.replicated) throw new Conflict(`seat ${JSON.stringify(seat.name)} is not replicated: it has one holder, given with holdSeat`);
    await tx
      .insertInto('seat_holding')
      .values({ seat: seat.name, machine: request.machine, module: request.module, scope: request.scope ?? seat.scope })
      .onConflict((oc) => oc.columns(['seat', 'machine', 'module']).doNothing())
      .execute();
    return seat;
  });
  return listHoldings(db, { seats: [seat.name] });
}

/**
 * Ends one recorded holding. A seat left with none on record is held by derivation again.
 * NotFound when that module holds no such seat on record. The seat is locked first, as every
 * change of its holdings locks it: the holding's delete then updates the seat's held_on_record (a
 * trigger), and taking the holding before the seat deadlocked with a holdSeat that took the seat
 * and then wanted the holding.
 */
export async function releaseSeat(db: Kysely<DB>, catalogue: Catalogue, request: Omit<HolderRequest, 'scope'>): Promise<Holding[]> {
  checkName(request.seat, 'seat');
  checkName(request.machine, 'machine');
  checkName(request.module, 'module');
  const seat = await db.transaction().execute(async (tx) => {
    await lockSeat(tx, request.seat);
    const seat = await seatByName(tx, catalogue, request.seat);
    const deleted = await tx
      .deleteFrom('seat_holding')
      .where('seat', '=', seat.name)
      .where('machine', '=', request.machine)
      .where('module', '=', request.module)
      .executeTakeFirst();
    if (Number(deleted.numDeletedRows) === 0) throw new NotFound('holding', `${seat.name} by ${request.module} on ${request.machine}`);
    return seat;
  });
  return listHoldings(db, { seats: [seat.name] });
}

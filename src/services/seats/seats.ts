import { sql, type Kysely, type Transaction } from 'kysely';
import type { DB, SeatRow } from '../../store/tables.js';
import type { Catalogue, SeatDefinition } from './catalogue.js';
import { Conflict, Invalid, NotFound } from '../../kernel/errors.js';
import { checkName } from '../../kernel/names.js';
import { parseProtocol, readNames, readVerbs, widenProtocol, type Protocol } from './protocol.js';

type Db = Kysely<DB> | Transaction<DB>;

export interface Seat extends SeatDefinition {}

export interface Alias {
  alias: string;
  seat: string;
}

/**
 * A row's protocol, each empty list standing in for the compiled one of a default seat: a row
 * written before the protocol was data keeps the binary's until seeding fills it.
 */
function toSeat(row: SeatRow, catalogue: Catalogue): Seat {
  const compiled = catalogue.seats.get(row.name);
  const accepts = readNames(row.accepts);
  const emits = readNames(row.emits);
  const serves = readVerbs(row.serves);
  return {
    name: row.name,
    scope: row.scope,
    delivers: row.delivers,
    decided: row.decided,
    replicated: row.replicated,
    accepts: accepts.length || !compiled ? accepts : compiled.accepts,
    emits: emits.length || !compiled ? emits : compiled.emits,
    serves: serves.length || !compiled ? serves : compiled.serves,
  };
}

const json = (value: unknown) => JSON.stringify(value);

/** Every seat, by name. */
export async function listSeats(db: Db, catalogue: Catalogue): Promise<Seat[]> {
  const rows = await db.selectFrom('seat').selectAll().orderBy('name').execute();
  return rows.map((row) => toSeat(row, catalogue));
}

/**
 * The seats that the given names resolve to, a name or an alias each, in the order asked;
 * `undefined` where a name resolves to nothing. One statement however many names.
 */
export async function seatsByNames(db: Db, catalogue: Catalogue, names: readonly string[]): Promise<(Seat | undefined)[]> {
  if (names.length === 0) return [];
  const keys = [...new Set(names)];
  const rows = await db
    .selectFrom('seat')
    .leftJoin('seat_alias', 'seat_alias.seat', 'seat.name')
    .selectAll('seat')
    .select('seat_alias.alias')
    .where((eb) => eb.or([eb('seat.name', 'in', keys), eb('seat_alias.alias', 'in', keys)]))
    .execute();
  const byKey = new Map<string, Seat>();
  for (const row of rows) {
    const seat = toSeat(row, catalogue);
    byKey.set(row.name, seat);
    if (row.alias) byKey.set(row.alias, seat);
  }
  return names.map((name) => byKey.get(name));
}

/** The seat a name or alias resolves to; NotFound otherwise. */
export async function seatByName(db: Db, catalogue: Catalogue, name: string): Promise<Seat> {
  const [seat] = await seatsByNames(db, catalogue, [name]);
  if (!seat) throw new NotFound('seat', name);
  return seat;
}

/** The canonical name a name or alias resolves to, or undefined. */
export async function resolveSeatName(db: Db, name: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('seat')
    .select('name')
    .where('name', '=', name)
    .unionAll(db.selectFrom('seat_alias').select('seat as name').where('alias', '=', name))
    .executeTakeFirst();
  return row?.name;
}

/** Every former name and the seat it resolves to. */
export async function listAliases(db: Db): Promise<Alias[]> {
  return db.selectFrom('seat_alias').select(['alias', 'seat']).orderBy('alias').execute();
}

/** The aliases of each seat named, in the order asked. */
export async function aliasesOfSeats(db: Db, seats: readonly string[]): Promise<string[][]> {
  if (seats.length === 0) return [];
  const rows = await db.selectFrom('seat_alias').select(['alias', 'seat']).where('seat', 'in', [...new Set(seats)]).orderBy('alias').execute();
  return seats.map((seat) => rows.filter((r) => r.seat === seat).map((r) => r.alias));
}

export interface SeedReport {
  added: number;
  widened: number;
}

/**
 * Writes the binary's default seats where absent; never overwrites a row and never deletes one.
 * A default whose name is now an alias is present under its new name and is not brought back.
 * A present row's protocol is widened by verb name; for the controller's own seat a verb the
 * binary defines takes the binary's definition. Safe for several replicas starting at once.
 */
export async function seedSeats(db: Kysely<DB>, catalogue: Catalogue): Promise<SeedReport> {
  const report: SeedReport = { added: 0, widened: 0 };
  for (const seat of catalogue.seats.values()) {
    await db.transaction().execute(async (tx) => {
      const present = await resolveSeatName(tx, seat.name);
      if (!present) {
        const inserted = await tx
          .insertInto('seat')
          .values({
            name: seat.name,
            scope: seat.scope,
            delivers: seat.delivers,
            decided: seat.decided,
            replicated: seat.replicated,
            accepts: json(seat.accepts),
            emits: json(seat.emits),
            serves: json(seat.serves),
          })
          .onConflict((oc) => oc.column('name').doNothing())
          .executeTakeFirst();
        if (Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0) {
          report.added++;
          return;
        }
      }
      const name = present ?? seat.name;
      const row = await tx.selectFrom('seat').select(['accepts', 'emits', 'serves']).where('name', '=', name).forUpdate().executeTakeFirstOrThrow();
      const current: Protocol = { accepts: readNames(row.accepts), emits: readNames(row.emits), serves: readVerbs(row.serves) };
      const { protocol, changed } = widenProtocol(current, seat, seat.name === catalogue.controller);
      if (!changed) return;
      await tx
        .updateTable('seat')
        .set({ accepts: json(protocol.accepts), emits: json(protocol.emits), serves: json(protocol.serves) })
        .where('name', '=', name)
        .execute();
      report.widened++;
    });
  }
  return report;
}

/**
 * Gives a seat a new name in one transaction: the old name becomes an alias, aliases of the old
 * name follow, holdings and plans follow (foreign keys cascade). Renaming back drops the alias
 * instead of pointing a name at itself. Refuses the same name, a missing seat, a name that is
 * another seat or another seat's alias.
 */
export async function renameSeat(db: Kysely<DB>, catalogue: Catalogue, from: string, to: string): Promise<Seat> {
  checkName(from, 'from');
  checkName(to, 'to');
  if (from === to) throw new Invalid(`${JSON.stringify(to)} is already the seat's name`, 'to');
  return db.transaction().execute(async (tx) => {
    const current = await lockSeat(tx, from);
    if (current === to) throw new Invalid(`${JSON.stringify(from)} is an alias of ${JSON.stringify(to)}, which is already the seat's name`, 'to');
    const taken = await tx.selectFrom('seat').select('name').where('name', '=', to).executeTakeFirst();
    if (taken) throw new Conflict(`a seat named ${JSON.stringify(to)} already exists`);
    const alias = await tx.selectFrom('seat_alias').select('seat').where('alias', '=', to).executeTakeFirst();
    if (alias && alias.seat !== current) throw new Conflict(`${JSON.stringify(to)} is an alias of seat ${JSON.stringify(alias.seat)}`);
    if (alias) await tx.deleteFrom('seat_alias').where('alias', '=', to).execute();
    await tx.updateTable('seat').set({ name: to }).where('name', '=', current).execute();
    await tx.insertInto('seat_alias').values({ alias: current, seat: to }).execute();
    return seatByName(tx, catalogue, to);
  });
}

/**
 * Resolves a name or alias and locks the seat's row. A rename committed while we waited for the
 * lock moves the row away from the name we resolved; resolving again then finds it.
 */
async function lockSeat(tx: Transaction<DB>, name: string): Promise<string> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await resolveSeatName(tx, name);
    if (!current) throw new NotFound('seat', name);
    const locked = await tx.selectFrom('seat').select('name').where('name', '=', current).forUpdate().executeTakeFirst();
    if (locked) return current;
  }
  throw new Conflict(`seat ${JSON.stringify(name)} is being renamed by others; try again`);
}

export interface SeatInput {
  name: string;
  scope?: string | null;
  delivers?: string | null;
  decided?: string | null;
  replicated?: boolean | null;
  /** The whole protocol as JSON text or a value: `{accepts, emits, serves}`. */
  protocol?: unknown;
}

/**
 * Creates a seat, or changes the one the name resolves to: fields left out keep their value, a
 * protocol given replaces the row's. Refuses a bad name or a protocol that is not well formed.
 */
export async function defineSeat(db: Kysely<DB>, catalogue: Catalogue, input: SeatInput): Promise<Seat> {
  checkName(input.name, 'name');
  const protocol = input.protocol === undefined || input.protocol === null ? undefined : parseProtocol(input.protocol);
  return db.transaction().execute(async (tx) => {
    const present = await resolveSeatName(tx, input.name);
    const fields = {
      ...(input.scope != null && { scope: input.scope }),
      ...(input.delivers != null && { delivers: input.delivers }),
      ...(input.decided != null && { decided: input.decided }),
      ...(input.replicated != null && { replicated: input.replicated }),
      ...(protocol && { accepts: json(protocol.accepts), emits: json(protocol.emits), serves: json(protocol.serves) }),
    };
    if (present) {
      if (Object.keys(fields).length) await tx.updateTable('seat').set(fields).where('name', '=', present).execute();
    } else {
      await tx.insertInto('seat').values({ name: input.name, ...fields }).execute();
    }
    return seatByName(tx, catalogue, present ?? input.name);
  });
}

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
  const recordedSeat = seats ? sql`and h.seat in (${sql.join(seats)})` : sql``;
  const recordedMachine = machines ? sql`and h.machine in (${sql.join(machines)})` : sql``;
  const derivedSeat = seats ? sql`and k.seat in (${sql.join(seats)})` : sql``;
  const derivedMachine = machines ? sql`and a.machine in (${sql.join(machines)})` : sql``;
  // Recorded and derived holdings never share a seat, so `union all`; a module claiming a seat by
  // two of its names is one holder (`distinct`). Sorted here rather than by Postgres's collation.
  const result = await sql<{ holdings: [string, string, string, string, string | null, string, boolean][] | string }>`
    select coalesce(json_agg(json_build_array(seat, scope, machine, module, site, since, derived)), '[]'::json) as holdings
      from (
        select h.seat, h.scope, h.machine, h.module, m.site, h.since, false as derived
          from seat_holding h join machine m on m.name = h.machine
         where true ${recordedSeat} ${recordedMachine}
        union all
        select distinct k.seat, s.scope, a.machine, a.module, m.site, a.since, true as derived
          from assignment a
          join machine m on m.name = a.machine
          cross join lateral jsonb_array_elements_text(a.claims) as c(claim)
          join (select name as key, name as seat from seat union all select alias, seat from seat_alias) k on k.key = c.claim
          join seat s on s.name = k.seat
         where a.running
           and not exists (select 1 from seat_holding r where r.seat = k.seat)
           ${derivedSeat} ${derivedMachine}
      ) held`.execute(db);
  const raw = result.rows[0]!.holdings;
  const rows = typeof raw === 'string' ? (JSON.parse(raw) as Exclude<typeof raw, string>) : raw;
  return rows
    .map(([seat, scope, machine, module, site, since, derived]) => ({ seat, scope, machine, module, site, since: new Date(since), derived }))
    .sort((a, b) => byCode(a.seat, b.seat) || byCode(a.machine, b.machine) || byCode(a.module, b.module));
}

/** Names are ASCII letters, digits, '-' and '_': code-unit order is their order. */
export const byCode = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

interface HolderRequest {
  seat: string;
  machine: string;
  module: string;
  scope?: string | null;
}

/** Checks names, resolves the seat and proves the module runs on the machine. */
async function judgeHolder(tx: Db, catalogue: Catalogue, request: HolderRequest): Promise<Seat> {
  checkName(request.seat, 'seat');
  checkName(request.machine, 'machine');
  checkName(request.module, 'module');
  const seat = await seatByName(tx, catalogue, request.seat);
  const machine = await tx.selectFrom('machine').select('name').where('name', '=', request.machine).executeTakeFirst();
  if (!machine) throw new NotFound('machine', request.machine);
  const assignment = await tx
    .selectFrom('assignment')
    .select('running')
    .where('machine', '=', request.machine)
    .where('module', '=', request.module)
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

/** Adds a holder beside those on record, for a replicated seat only; holding it already changes nothing. */
export async function addSeatHolder(db: Kysely<DB>, catalogue: Catalogue, request: HolderRequest): Promise<Holding[]> {
  const seat = await db.transaction().execute(async (tx) => {
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
 * NotFound when that module holds no such seat on record.
 */
export async function releaseSeat(db: Kysely<DB>, catalogue: Catalogue, request: Omit<HolderRequest, 'scope'>): Promise<Holding[]> {
  checkName(request.seat, 'seat');
  checkName(request.machine, 'machine');
  checkName(request.module, 'module');
  const seat = await seatByName(db, catalogue, request.seat);
  const deleted = await db
    .deleteFrom('seat_holding')
    .where('seat', '=', seat.name)
    .where('machine', '=', request.machine)
    .where('module', '=', request.module)
    .executeTakeFirst();
  if (Number(deleted.numDeletedRows) === 0) throw new NotFound('holding', `${seat.name} by ${request.module} on ${request.machine}`);
  return listHoldings(db, { seats: [seat.name] });
}

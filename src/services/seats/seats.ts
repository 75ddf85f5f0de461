import { sql, type Transaction } from 'kysely';
import { Conflict, NotFound } from '../../kernel/errors.js';
import type { Db } from '../../store/db.js';
import { byNameSql } from '../../store/name-order.js';
import type { DB, SeatRow } from '../../store/tables.js';
import { readNames, readVerbs } from '../verbs/protocol.js';
import type { Catalogue, SeatDefinition } from './catalogue.js';

export interface Seat extends SeatDefinition {}

export interface Alias {
  alias: string;
  seat: string;
}

/**
 * The default a row comes from: the compiled seat of its name, else of a former name (a renamed
 * default), as seeding finds it. `defaults` are the row's aliases that name a compiled seat.
 */
function compiledOf(row: SeatRow, defaults: readonly string[], catalogue: Catalogue): SeatDefinition | undefined {
  const own = catalogue.seats.get(row.name);
  if (own) return own;
  for (const alias of defaults) {
    const compiled = catalogue.seats.get(alias);
    if (compiled) return compiled;
  }
  return undefined;
}

/**
 * A row's protocol, each empty list standing in for the compiled one of the default it comes from
 * (by its name or a former name): a row written before the protocol was data keeps the binary's
 * until seeding fills it.
 */
export function toSeat(row: SeatRow & { defaults: unknown }, catalogue: Catalogue): Seat {
  const defaults = typeof row.defaults === 'string' ? (JSON.parse(row.defaults) as string[]) : ((row.defaults as string[] | null) ?? []);
  const compiled = compiledOf(row, defaults, catalogue);
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

/** The seat rows with, in the same statement, each one's aliases that name a default seat. */
export function seatQuery(db: Db, catalogue: Catalogue) {
  const defaults = [...catalogue.seats.keys()];
  return db
    .selectFrom('seat')
    .selectAll('seat')
    .select(sql<string[] | null>`(select json_agg(d.alias) from seat_alias d where d.seat = seat.name and d.alias in (${sql.join(defaults)}))`.as('defaults'));
}

/** Every seat, by name. One statement. */
export async function listSeats(db: Db, catalogue: Catalogue): Promise<Seat[]> {
  const rows = await seatQuery(db, catalogue).orderBy(byNameSql('seat.name')).execute();
  return rows.map((row) => toSeat(row, catalogue));
}

/**
 * The seats that the given names resolve to, a name or an alias each, in the order asked;
 * `undefined` where a name resolves to nothing. One statement however many names.
 */
export async function seatsByNames(db: Db, catalogue: Catalogue, names: readonly string[]): Promise<(Seat | undefined)[]> {
  if (names.length === 0) return [];
  const keys = [...new Set(names)];
  const rows = await seatQuery(db, catalogue)
    .leftJoin('seat_alias', 'seat_alias.seat', 'seat.name')
    .select('seat_alias.alias')
    .where(sql<boolean>`(seat.name = any(${keys}::text[]) or seat_alias.alias = any(${keys}::text[]))`)
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
  return db.selectFrom('seat_alias').select(['alias', 'seat']).orderBy(byNameSql('alias')).execute();
}

/** The aliases of each seat named, in the order asked. */
export async function aliasesOfSeats(db: Db, seats: readonly string[]): Promise<string[][]> {
  if (seats.length === 0) return [];
  const rows = await db
    .selectFrom('seat_alias')
    .select(['alias', 'seat'])
    .where('seat', 'in', [...new Set(seats)])
    .orderBy(byNameSql('alias'))
    .execute();
  return seats.map((seat) => rows.filter((r) => r.seat === seat).map((r) => r.alias));
}

/**
 * Resolves a name or alias and locks the seat's row. A rename committed while we waited for the
 * lock moves the row away from the name we resolved; resolving again then finds it.
 */
export async function lockSeat(tx: Transaction<DB>, name: string): Promise<string> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await resolveSeatName(tx, name);
    if (!current) throw new NotFound('seat', name);
    const locked = await tx.selectFrom('seat').select('name').where('name', '=', current).forUpdate().executeTakeFirst();
    if (locked) return current;
  }
  throw new Conflict(`seat ${JSON.stringify(name)} is being renamed by others; try again`);
}

/** A protocol list as the seat row keeps it: JSON text. */
export const json = (value: unknown): string => JSON.stringify(value);

/** Every name a seat goes by, its own and each alias, as rows (key, seat): what a module's claim is matched against. */
export const SEAT_NAMES = sql`(select name as key, name as seat from seat union all select alias, seat from seat_alias)`;

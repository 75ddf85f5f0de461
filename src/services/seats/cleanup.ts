import { type Kysely, sql } from 'kysely';
import { Conflict, NotFound } from '../../kernel/errors.js';
import { checkName } from '../../kernel/names.js';
import type { DB } from '../../store/tables.js';
import type { Catalogue } from './catalogue.js';
import { type Holding, listHoldings } from './holdings.js';
import { controllerSeatConflict } from './rename.js';
import { lockSeat, type Seat, seatByName } from './seats.js';

/** How many holdings a refusal names before it says "and N more": a refusal is a sentence, not a list. */
const HOLDINGS_NAMED = 3;

/** `seat by module on machine`, a few of them, marked derived where a claim holds it, for a refusal's message. */
export function describeHoldings(holdings: readonly Holding[]): string {
  const named = holdings
    .slice(0, HOLDINGS_NAMED)
    .map((h) => `${h.seat} by ${h.module} on ${h.machine}${h.derived ? ' (derived from its claim)' : ''}`)
    .join(', ');
  return holdings.length > HOLDINGS_NAMED ? `${named} and ${holdings.length - HOLDINGS_NAMED} more` : named;
}

/**
 * Drops one former name: the name no longer resolves, and the seat it pointed to is answered as it
 * is now. NotFound for a name that is no alias (a seat's own name included).
 */
export async function removeAlias(db: Kysely<DB>, catalogue: Catalogue, alias: string): Promise<Seat> {
  checkName(alias, 'alias');
  return db.transaction().execute(async (tx) => {
    const removed = await tx.deleteFrom('seat_alias').where('alias', '=', alias).returning('seat').executeTakeFirst();
    if (!removed) throw new NotFound('alias', alias);
    return seatByName(tx, catalogue, removed.seat);
  });
}

/**
 * Deletes a seat (by its name or an alias) with its aliases, in one transaction, and answers it
 * as it was. Refuses (Conflict) the controller's own seat, a seat with any holding — recorded or
 * derived —, and a seat a plan not CLOSED names. Its CLOSED plans go with it (the foreign key
 * does not cascade); a plan that was behind one of them keeps no `behind`.
 */
export async function retireSeat(db: Kysely<DB>, catalogue: Catalogue, name: string): Promise<Seat> {
  checkName(name, 'seat');
  return db.transaction().execute(async (tx) => {
    const current = await lockSeat(tx, name);
    if (current === catalogue.controller) throw controllerSeatConflict(current, 'retired');
    const held = await listHoldings(tx, { seats: [current] });
    if (held.length) {
      throw new Conflict(`seat ${JSON.stringify(current)} is held: ${describeHoldings(held)}; release it, or stop the modules that claim it, first`);
    }
    const open = await tx
      .selectFrom('plan')
      .select(['id', 'state'])
      .where('seat', '=', current)
      .where('state', '<>', 'CLOSED')
      .orderBy('id')
      .executeTakeFirst();
    if (open) throw new Conflict(`seat ${JSON.stringify(current)} is named by plan ${JSON.stringify(open.id)}, which is ${open.state}; close it first`);
    const seat = await seatByName(tx, catalogue, current);
    await sql`update plan set behind = null where behind in (select id from plan where seat = ${current})`.execute(tx);
    await tx.deleteFrom('plan').where('seat', '=', current).execute();
    await tx.deleteFrom('seat').where('name', '=', current).execute();
    return seat;
  });
}

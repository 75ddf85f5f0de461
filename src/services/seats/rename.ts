import type { Kysely } from 'kysely';
import { Conflict, Invalid } from '../../kernel/errors.js';
import { checkName } from '../../kernel/names.js';
import { isUniqueViolation } from '../../store/db.js';
import type { DB } from '../../store/tables.js';
import type { Catalogue } from './catalogue.js';
import { lockSeat, type Seat, seatByName } from './seats.js';

/**
 * Gives a seat a new name in one transaction: the old name becomes an alias, aliases of the old
 * name follow, holdings and plans follow (foreign keys cascade). Renaming back drops the alias
 * instead of pointing a name at itself. Refuses the same name, a missing seat, a name that is
 * another seat or another seat's alias, and the controller's own seat (by its name or an alias).
 */
export async function renameSeat(db: Kysely<DB>, catalogue: Catalogue, from: string, to: string): Promise<Seat> {
  checkName(from, 'from');
  checkName(to, 'to');
  if (from === to) throw new Invalid(`${JSON.stringify(to)} is already the seat's name`, 'to');
  return db.transaction().execute(async (tx) => {
    const current = await lockSeat(tx, from);
    if (current === catalogue.controller) throw controllerSeatConflict(current, 'renamed');
    if (current === to) throw new Invalid(`${JSON.stringify(from)} is an alias of ${JSON.stringify(to)}, which is already the seat's name`, 'to');
    const taken = await tx.selectFrom('seat').select('name').where('name', '=', to).executeTakeFirst();
    if (taken) throw new Conflict(`a seat named ${JSON.stringify(to)} already exists`);
    const alias = await tx.selectFrom('seat_alias').select('seat').where('alias', '=', to).executeTakeFirst();
    if (alias && alias.seat !== current) throw new Conflict(`${JSON.stringify(to)} is an alias of seat ${JSON.stringify(alias.seat)}`);
    if (alias) await tx.deleteFrom('seat_alias').where('alias', '=', to).execute();
    await tx
      .updateTable('seat')
      .set({ name: to })
      .where('name', '=', current)
      .execute()
      .catch((error: unknown) => {
        // Another rename to the same name committed while this one waited on it: the name is taken now.
        throw isUniqueViolation(error) ? new Conflict(`a seat named ${JSON.stringify(to)} already exists`) : error;
      });
    await tx.insertInto('seat_alias').values({ alias: current, seat: to }).execute();
    return seatByName(tx, catalogue, to);
  });
}

/**
 * The controller's own seat is named by MESH_CONTROLLER: its verbs answer on
 * `<subjects>.seat.<MESH_CONTROLLER>.*`, so a seat of another name would serve no one.
 */
export function controllerSeatConflict(seat: string, what: string): Conflict {
  return new Conflict(`seat ${JSON.stringify(seat)} is the controller's own (MESH_CONTROLLER): its verbs answer on that name, so it cannot be ${what}`);
}

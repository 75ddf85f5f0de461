import type { Kysely } from 'kysely';
import { Conflict, NotFound } from '../../kernel/errors.js';
import { checkName } from '../../kernel/names.js';
import type { DB } from '../../store/tables.js';
import { describeHoldings } from '../seats/cleanup.js';
import { listHoldings } from '../seats/holdings.js';
import { type Machine, machinesByNames } from './machines.js';

/**
 * Deletes a machine and its assignments in one transaction and answers it as it was. Refuses
 * (Conflict) while it holds a seat — any holding `holdings(machine:)` lists, recorded or derived
 * from a running module's claim. NotFound for an unknown machine. A machine that beats again is
 * heard afresh.
 */
export async function forgetMachine(db: Kysely<DB>, name: string): Promise<Machine> {
  checkName(name, 'machine');
  return db.transaction().execute(async (tx) => {
    // Locked as recordHeartbeats locks it, so a heartbeat in flight lands before or after, never between.
    const locked = await tx.selectFrom('machine').select('name').where('name', '=', name).forUpdate().executeTakeFirst();
    if (!locked) throw new NotFound('machine', name);
    // Its assignments too: a holding being recorded on one (holdSeat, addSeatHolder) commits first and is seen below.
    await tx.selectFrom('assignment').select('module').where('machine', '=', name).forUpdate().execute();
    const held = await listHoldings(tx, { machines: [name] });
    if (held.length) {
      throw new Conflict(`machine ${JSON.stringify(name)} holds seats: ${describeHoldings(held)}; hand them to another holder or release them first`);
    }
    const [machine] = await machinesByNames(tx, [name]);
    await tx.deleteFrom('machine').where('name', '=', name).execute();
    return machine!;
  });
}

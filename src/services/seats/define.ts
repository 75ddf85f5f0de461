import type { Kysely } from 'kysely';
import { checkName } from '../../kernel/names.js';
import type { DB } from '../../store/tables.js';
import type { Catalogue } from './catalogue.js';
import { parseProtocol } from './protocol.js';
import { json, resolveSeatName, type Seat, seatByName } from './seats.js';

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
      await tx
        .insertInto('seat')
        .values({ name: input.name, ...fields })
        .execute();
    }
    return seatByName(tx, catalogue, present ?? input.name);
  });
}

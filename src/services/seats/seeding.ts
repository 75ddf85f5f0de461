import type { Kysely } from 'kysely';
import type { DB } from '../../store/tables.js';
import { type Protocol, readNames, readVerbs, widenProtocol } from '../verbs/protocol.js';
import type { Catalogue } from './catalogue.js';
import { json, resolveSeatName } from './seats.js';

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

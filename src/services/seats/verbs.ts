import type { Kysely } from 'kysely';
import type { DB } from '../../store/tables.js';
import { type HandActLog, leaveHandAct, targetLabel } from '../hand-acts/hand-acts.js';
import { actingVerb } from '../verbs/verb.js';
import type { Catalogue } from './catalogue.js';
import { removeAlias, retireSeat } from './cleanup.js';

/** What the seat cleanup verbs need: the store, the binary's seats and the hand-act log. */
interface SeatsMesh extends HandActLog {
  db: Kysely<DB>;
  catalogue: Catalogue;
}

/** Drops a seat's former name; answers the seat it pointed to. */
export const removeAliasVerb = actingVerb(
  'removeAlias',
  'admin',
  { alias: { type: 'String', required: true, description: 'The former name to drop; it no longer resolves afterwards.' } },
  async (mesh: SeatsMesh, args, call) => {
    const seat = await removeAlias(mesh.db, mesh.catalogue, args.alias);
    await leaveHandAct(mesh, args, call, 'removeAlias', targetLabel(`${args.alias} (alias of ${seat.name})`));
    return seat;
  },
);

/** Deletes a seat nobody holds and no live plan names, with its aliases; answers the seat as it was. */
export const retireSeatVerb = actingVerb(
  'retireSeat',
  'admin',
  { seat: { type: 'String', required: true, description: 'The seat to retire, by its name or an alias.' } },
  async (mesh: SeatsMesh, args, call) => {
    const seat = await retireSeat(mesh.db, mesh.catalogue, args.seat);
    await leaveHandAct(mesh, args, call, 'retireSeat', seat.name);
    return seat;
  },
);

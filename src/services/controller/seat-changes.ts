import type { Kysely } from 'kysely';
import { isStoreUnavailable, STORE_UNAVAILABLE_MESSAGE, Unavailable } from '../../kernel/errors.js';
import type { DB } from '../../store/tables.js';
import type { MeshEvents } from '../events.js';
import { appendHandAct, checkActing, targetLabel } from '../hand-acts/hand-acts.js';
import type { ActOutbox } from '../hand-acts/outbox-write.js';
import { actTogether, deliverSoon, type OutboxMesh } from '../outbox/outbox.js';
import type { Catalogue } from '../seats/catalogue.js';
import { defineSeat, type SeatInput } from '../seats/define.js';
import { addSeatHolder, type Holding, holdSeat, releaseSeat } from '../seats/holdings.js';
import { renameSeat } from '../seats/rename.js';
import { resolveSeatName, type Seat } from '../seats/seats.js';

/** The why a seat change given none records: `HandAct.why` is never empty, and says so plainly. */
const WHY_NOT_GIVEN = 'not given';

/** What a seat change needs: the store, the binary's seats, the hand-act log (and its outbox's relay) and the `acted` notice. */
export interface SeatChangeMesh extends OutboxMesh {
  db: Kysely<DB>;
  catalogue: Catalogue;
  events: Pick<MeshEvents, 'emit'>;
}

/** Who changes a seat and why: why, cause and condition are optional for a seat change. */
export interface SeatChangeBy {
  actor: string;
  why?: string | null;
  cause?: string | null;
  condition?: string | null;
}

/**
 * Runs one seat change and its hand-act (act, target, the caller as actor) in one transaction: the
 * hand-act is written to the outbox beside the change and relayed to the bucket after the commit,
 * so a change never stands without its trace, whatever NATS does meanwhile. Then notifies `acted`
 * so the status counts it. A refused change leaves none. Why, cause and condition are judged
 * before the change (too long: Invalid, nothing changed); a blank or absent why is recorded as
 * "not given". The store away: Unavailable, nothing changed.
 */
async function changeSeat<T>(
  mesh: SeatChangeMesh,
  by: SeatChangeBy,
  act: string,
  change: (db: Kysely<DB>) => Promise<T>,
  target: (result: T) => string,
): Promise<T> {
  const why = typeof by.why === 'string' && by.why.trim() !== '' ? by.why : WHY_NOT_GIVEN;
  const acting = checkActing({ why, cause: by.cause, condition: by.condition });
  const outbox: ActOutbox = { tx: mesh.db, ids: [] };
  const result = await actTogether(mesh.db, async (tx) => {
    outbox.tx = tx;
    const done = await change(tx);
    await appendHandAct({ ...mesh, outbox }, { actor: by.actor, act, target: targetLabel(target(done)), ...acting });
    return done;
  });
  await deliverSoon(mesh, outbox.ids);
  mesh.events.emit('acted', act);
  return result;
}

/** The canonical name a seat name or alias resolves to now, for the hand-act's target; the name as given when none. */
const canonical = async (mesh: SeatChangeMesh, seat: string): Promise<string> => {
  try {
    return (await resolveSeatName(mesh.db, seat)) ?? seat;
  } catch (error) {
    if (isStoreUnavailable(error)) throw new Unavailable(`${STORE_UNAVAILABLE_MESSAGE}: nothing was changed`, { cause: error });
    throw error;
  }
};

/** `renameSeat`, leaving a hand-act whose target is `<old name> -> <new name>`. */
export async function renameSeatBy(mesh: SeatChangeMesh, by: SeatChangeBy, from: string, to: string): Promise<Seat> {
  const was = await canonical(mesh, from);
  return changeSeat(
    mesh,
    by,
    'renameSeat',
    (db) => renameSeat(db, mesh.catalogue, from, to),
    (seat) => `${was} -> ${seat.name}`,
  );
}

/** `defineSeat`, leaving a hand-act whose target is the seat's name. */
export function defineSeatBy(mesh: SeatChangeMesh, by: SeatChangeBy, input: SeatInput): Promise<Seat> {
  return changeSeat(
    mesh,
    by,
    'defineSeat',
    (db) => defineSeat(db, mesh.catalogue, input),
    (seat) => seat.name,
  );
}

interface HolderChange {
  seat: string;
  machine: string;
  module: string;
  scope?: string | null;
}

const HOLDER_CHANGES = { holdSeat, addSeatHolder, releaseSeat } as const;

/** `holdSeat`, `addSeatHolder` or `releaseSeat`, leaving a hand-act whose target is `<seat> by <module> on <machine>`. */
export async function changeHolderBy(mesh: SeatChangeMesh, by: SeatChangeBy, act: keyof typeof HOLDER_CHANGES, request: HolderChange): Promise<Holding[]> {
  const seat = await canonical(mesh, request.seat);
  return changeSeat(
    mesh,
    by,
    act,
    (db) => HOLDER_CHANGES[act](db, mesh.catalogue, request),
    () => `${seat} by ${request.module} on ${request.machine}`,
  );
}

import type { Kysely } from 'kysely';
import type { DB } from '../../store/tables.js';
import type { MeshEvents } from '../events.js';
import { appendHandAct, checkActing, type HandActLog, targetLabel } from '../hand-acts/hand-acts.js';
import type { Catalogue } from './catalogue.js';
import { defineSeat, type SeatInput } from './define.js';
import { addSeatHolder, type Holding, holdSeat, releaseSeat } from './holdings.js';
import { renameSeat } from './rename.js';
import { resolveSeatName, type Seat } from './seats.js';

/** The why a seat change given none records: `HandAct.why` is never empty, and says so plainly. */
const WHY_NOT_GIVEN = 'not given';

/** What a seat change needs: the store, the binary's seats, the hand-act log and the `acted` notice. */
export interface SeatChangeMesh extends HandActLog {
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
 * Runs one seat change and, once it has succeeded, leaves its hand-act (act, target, the caller as
 * actor) and notifies `acted` so the status counts it. A refused change leaves none. Why, cause
 * and condition are judged before the change (too long: Invalid, nothing changed); a blank or
 * absent why is recorded as "not given".
 */
async function changeSeat<T>(mesh: SeatChangeMesh, by: SeatChangeBy, act: string, change: () => Promise<T>, target: (result: T) => string): Promise<T> {
  const why = typeof by.why === 'string' && by.why.trim() !== '' ? by.why : WHY_NOT_GIVEN;
  const acting = checkActing({ why, cause: by.cause, condition: by.condition });
  const result = await change();
  await appendHandAct(mesh, { actor: by.actor, act, target: targetLabel(target(result)), ...acting });
  mesh.events.emit('acted', act);
  return result;
}

/** The canonical name a seat name or alias resolves to now, for the hand-act's target; the name as given when none. */
const canonical = async (mesh: SeatChangeMesh, seat: string): Promise<string> => (await resolveSeatName(mesh.db, seat)) ?? seat;

/** `renameSeat`, leaving a hand-act whose target is `<old name> -> <new name>`. */
export async function renameSeatBy(mesh: SeatChangeMesh, by: SeatChangeBy, from: string, to: string): Promise<Seat> {
  const was = await canonical(mesh, from);
  return changeSeat(
    mesh,
    by,
    'renameSeat',
    () => renameSeat(mesh.db, mesh.catalogue, from, to),
    (seat) => `${was} -> ${seat.name}`,
  );
}

/** `defineSeat`, leaving a hand-act whose target is the seat's name. */
export function defineSeatBy(mesh: SeatChangeMesh, by: SeatChangeBy, input: SeatInput): Promise<Seat> {
  return changeSeat(
    mesh,
    by,
    'defineSeat',
    () => defineSeat(mesh.db, mesh.catalogue, input),
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
    () => HOLDER_CHANGES[act](mesh.db, mesh.catalogue, request),
    () => `${seat} by ${request.module} on ${request.machine}`,
  );
}

import DataLoader from 'dataloader';
import type { Machine } from '../../services/machines/machines.js';
import type { Mesh } from '../../services/mesh.js';
import { type Holding, listHoldings } from '../../services/seats/holdings.js';
import { aliasesOfSeats, type Seat, seatsByNames } from '../../services/seats/seats.js';
import { MACHINE_BRIEF_FIELDS } from '../machines/machine.js';
import type { Loaders } from '../support/context.js';
import { asksOnly, KnownLoader } from '../support/known-loader.js';

function groupBy(holdings: Holding[], keys: readonly string[], key: (h: Holding) => string): Holding[][] {
  const groups = new Map<string, Holding[]>(keys.map((k) => [k, []]));
  for (const holding of holdings) groups.get(key(holding))?.push(holding);
  return keys.map((k) => groups.get(k)!);
}

/**
 * Seats, their aliases and holdings by seat and by machine, read once a request. Holdings bring
 * the seats and machines they name (through `machine`, the machines' own loader), all of a level
 * in one statement, when the query asks for them.
 */
export function seatLoaders(
  mesh: Pick<Mesh, 'db' | 'catalogue'>,
  machine: KnownLoader<Machine | undefined>,
): Pick<Loaders, 'seat' | 'holdingsBySeat' | 'holdingsByMachine' | 'aliasesBySeat'> {
  const { db, catalogue } = mesh;
  const seat = new KnownLoader<Seat | undefined>((names) => seatsByNames(db, catalogue, names));
  const nextLevel = async (groups: Holding[][], asked: ReadonlySet<string>) => {
    const holdings = groups.flat();
    await Promise.all([
      // A selection of a machine's name and site is answered by the holding itself (Holding.machine).
      asked.has('machine') && !asksOnly(asked, 'machine', MACHINE_BRIEF_FIELDS) && machine.prefetch(holdings.map((h) => h.machine)),
      asked.has('seat') && seat.prefetch(holdings.map((h) => h.seat)),
    ]);
    return groups;
  };
  return {
    seat,
    holdingsBySeat: new KnownLoader(async (seats, asked) =>
      nextLevel(
        groupBy(await listHoldings(db, { seats }), seats, (h) => h.seat),
        asked,
      ),
    ),
    holdingsByMachine: new KnownLoader(async (machines, asked) =>
      nextLevel(
        groupBy(await listHoldings(db, { machines }), machines, (h) => h.machine),
        asked,
      ),
    ),
    aliasesBySeat: new DataLoader((seats) => aliasesOfSeats(db, seats)),
  };
}

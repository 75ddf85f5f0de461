import DataLoader from 'dataloader';
import { machinesByNames } from '../services/machines/machines.js';
import type { Mesh } from '../services/mesh.js';
import { appliesOfPlans } from '../services/plans/applies.js';
import { type Holding, listHoldings } from '../services/seats/holdings.js';
import { aliasesOfSeats, seatsByNames } from '../services/seats/seats.js';
import { MACHINE_BRIEF_FIELDS } from './machines/machine.js';
import type { Loaders } from './support/context.js';
import { asksOnly, KnownLoader } from './support/known-loader.js';

function groupBy(holdings: Holding[], keys: readonly string[], key: (h: Holding) => string): Holding[][] {
  const groups = new Map<string, Holding[]>(keys.map((k) => [k, []]));
  for (const holding of holdings) groups.get(key(holding))?.push(holding);
  return keys.map((k) => groups.get(k)!);
}

/** A fresh set of loaders: one per request, so nothing cached outlives the request that read it. */
export function createLoaders(mesh: Mesh): Loaders {
  const { db, catalogue } = mesh;
  const seat = new KnownLoader((names) => seatsByNames(db, catalogue, names));
  const machine = new KnownLoader((names) => machinesByNames(db, names, mesh.hearing.machines));
  // Holdings bring the seats and machines they name, all of a level in one statement, when the query asks for them.
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
    machine,
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
    appliesByPlan: new DataLoader((plans) => appliesOfPlans(db, plans)),
  };
}

import DataLoader from 'dataloader';
import type { Loaders } from '../schema/context.js';
import { machinesByNames } from '../services/machines/machines.js';
import type { Mesh } from '../services/mesh.js';
import { appliesOfPlans } from '../services/plans/applies.js';
import { type Holding, listHoldings } from '../services/seats/holdings.js';
import { aliasesOfSeats, seatsByNames } from '../services/seats/seats.js';

function groupBy(holdings: Holding[], keys: readonly string[], key: (h: Holding) => string): Holding[][] {
  const groups = new Map<string, Holding[]>(keys.map((k) => [k, []]));
  for (const holding of holdings) groups.get(key(holding))?.push(holding);
  return keys.map((k) => groups.get(k)!);
}

/** A fresh set of loaders: one per request, so nothing cached outlives the request that read it. */
export function createLoaders(mesh: Mesh): Loaders {
  const { db, catalogue } = mesh;
  return {
    seat: new DataLoader((names) => seatsByNames(db, catalogue, names)),
    machine: new DataLoader((names) => machinesByNames(db, names)),
    holdingsBySeat: new DataLoader(async (seats) => groupBy(await listHoldings(db, { seats }), seats, (h) => h.seat)),
    holdingsByMachine: new DataLoader(async (machines) => groupBy(await listHoldings(db, { machines }), machines, (h) => h.machine)),
    aliasesBySeat: new DataLoader((seats) => aliasesOfSeats(db, seats)),
    appliesByPlan: new DataLoader((plans) => appliesOfPlans(db, plans)),
  };
}

import type DataLoader from 'dataloader';
import type { Caller } from '../services/access/caller.js';
import type { Machine } from '../services/machines/machines.js';
import type { Mesh } from '../services/mesh.js';
import type { PlanApply } from '../services/plans/applies.js';
import type { Holding } from '../services/seats/holdings.js';
import type { Seat } from '../services/seats/seats.js';

/** Per-request loaders: each seat, machine, holding list and plan's applies is fetched once per request. */
export interface Loaders {
  seat: DataLoader<string, Seat | undefined>;
  machine: DataLoader<string, Machine | undefined>;
  holdingsBySeat: DataLoader<string, Holding[]>;
  holdingsByMachine: DataLoader<string, Holding[]>;
  aliasesBySeat: DataLoader<string, string[]>;
  appliesByPlan: DataLoader<string, PlanApply[]>;
}

/** What every resolver sees: the mesh's services, the caller, this request's loaders, its instant. */
export interface GatewayContext {
  mesh: Mesh;
  caller: Caller;
  loaders: Loaders;
  /** The request's instant, so every state judged in one response is judged at one time. */
  now: Date;
}

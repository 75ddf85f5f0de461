import type DataLoader from 'dataloader';
import type { Caller } from '../../services/access/caller.js';
import type { Judging, Machine } from '../../services/machines/machines.js';
import type { Mesh } from '../../services/mesh.js';
import type { PlanApply } from '../../services/plans/applies.js';
import type { Holding } from '../../services/seats/holdings.js';
import type { Seat } from '../../services/seats/seats.js';
import type { KnownLoader } from './known-loader.js';

/**
 * Per-request loaders: each seat, machine, holding list and plan's applies is fetched once per
 * request. Seats, machines and holdings answer without a promise once read (KnownLoader), and a
 * whole level is read for all its parents at once when the query asks for it.
 */
export interface Loaders {
  seat: KnownLoader<Seat | undefined>;
  machine: KnownLoader<Machine | undefined>;
  holdingsBySeat: KnownLoader<Holding[]>;
  holdingsByMachine: KnownLoader<Holding[]>;
  aliasesBySeat: DataLoader<string, string[]>;
  appliesByPlan: DataLoader<string, PlanApply[]>;
}

/** What every resolver sees: the mesh's services, the caller, this request's loaders, its instant. */
export interface GatewayContext {
  mesh: Mesh;
  caller: Caller;
  loaders: Loaders;
  /** The request's instant. */
  now: Date;
  /** What every machine's state in one response is judged against: how far news was written when the request came (`machineState`). */
  judging: Judging;
}

import type { Mesh } from '../services/mesh.js';
import { machineLoader } from './machines/loaders.js';
import { appliesLoader } from './plans/loaders.js';
import { seatLoaders } from './seats/loaders.js';
import type { Loaders } from './support/context.js';

/**
 * A fresh set of loaders, each from its domain's folder: one set per request, so nothing cached
 * outlives the request that read it. The registry sits beside index.ts, the other assembly point:
 * in support/ it would import the domains that import support/ (a folder cycle).
 */
export function createLoaders(mesh: Mesh): Loaders {
  const machine = machineLoader(mesh);
  return { machine, ...seatLoaders(mesh, machine), appliesByPlan: appliesLoader(mesh) };
}

import { type Machine, machinesByNames } from '../../services/machines/machines.js';
import type { Mesh } from '../../services/mesh.js';
import { KnownLoader } from '../support/known-loader.js';

/** Machines by name, read once a request: `machine(name)` and `Holding.machine` get one without a promise once it is read. */
export const machineLoader = (mesh: Pick<Mesh, 'db' | 'hearing'>): KnownLoader<Machine | undefined> =>
  new KnownLoader((names) => machinesByNames(mesh.db, names, mesh.hearing.machines));

import { type Machine, machinesByNames } from '../../services/machines/machines.js';
import { heardAsShown, type MachineReading } from '../../services/machines/shown.js';
import type { Mesh } from '../../services/mesh.js';
import { KnownLoader } from '../support/known-loader.js';

const readings = new WeakMap<object, MachineReading>();

/**
 * What every machine of one request is read with: this replica's memory of last-heard and the
 * composition current when the request first read a machine, kept for the whole request so its
 * pages, lists and `Machine.state` fields judge against one composition (issue 37).
 */
export function readingOf(ctx: { mesh: Pick<Mesh, 'hearing' | 'status'> }): MachineReading {
  let reading = readings.get(ctx);
  if (!reading) {
    reading = { heard: ctx.mesh.hearing.machines, shown: ctx.mesh.status.current() };
    readings.set(ctx, reading);
  }
  return reading;
}

/** Machines by name, read once a request: `machine(name)` and `Holding.machine` get one without a promise once it is read. */
export const machineLoader = (mesh: Pick<Mesh, 'db' | 'hearing' | 'status'>): KnownLoader<Machine | undefined> =>
  new KnownLoader((names) => machinesByNames(mesh.db, names, heardAsShown({ heard: mesh.hearing.machines, shown: mesh.status.current() })));

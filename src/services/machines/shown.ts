import { nameIndex } from '../../kernel/names.js';
import type { Db } from '../../store/db.js';
import type { HeardOf } from './heard.js';
import { flooredState, type Judging, listMachines, type Machine, type MachineFilter, type MachineState, machineState } from './machines.js';

/** One machine as the last composition showed it: what `status` shows of it. */
export interface ShownMachine {
  name: string;
  state: MachineState;
  /** ISO 8601. */
  lastHeardAt: string;
}

/** The last composition this replica holds (the status feed's `current()`): its machines in code-unit name order. */
export interface Shown {
  /** ISO 8601: when it was composed; its states were judged at or before it. */
  composedAt: string;
  machines: readonly ShownMachine[];
}

/**
 * What a reader of machines takes beside the store: this replica's memory of last-heard (issue 37)
 * and the last composition shown. Both optional: a reader without them shows the store's checkpoint.
 */
export interface MachineReading {
  heard?: HeardOf;
  shown?: Shown;
}

/**
 * The machine `name` as `shown` showed it; undefined when it does not show it. A binary search:
 * compositions keep their machines in code-unit name order, so no index is built per composition.
 */
export function shownMachine(shown: Shown | undefined, name: string): ShownMachine | undefined {
  const machines = shown?.machines;
  if (!machines) return undefined;
  const found = machines[nameIndex(machines, (m) => m.name, name)];
  return found?.name === name ? found : undefined;
}

/**
 * Last-heard as every reader shows it: the later of this replica's memory and what the last
 * composition showed (composed by whichever replica serves, whose memory may hold a beat this one's
 * has not read yet). `withHeard` takes it over the store's checkpoint: so a machine's `lastHeardAt`
 * is never earlier than the one `status` shows.
 */
export function heardAsShown(reading: MachineReading): HeardOf {
  const { heard, shown } = reading;
  return {
    lastMs(machine: string): number | undefined {
      const inMemory = heard?.lastMs(machine);
      const lastShown = shownMachine(shown, machine);
      if (!lastShown) return inMemory;
      const shownMs = Date.parse(lastShown.lastHeardAt);
      return inMemory === undefined || shownMs > inMemory ? shownMs : inMemory;
    },
  };
}

/**
 * A machine's state as every reader shows it (`Machine.state`, `machines(state:)`,
 * `machinesConnection(state:)`): judged at `judging` (the watermark this replica last read) from
 * its last-heard (already the later of store, memory and composition), never better than the last
 * composition showed for that same last-heard instant (`flooredState`): the state `status` shows.
 */
export function stateAsShown(machine: { name: string; lastHeardAt: Date }, judging: Judging, shown: Shown | undefined): MachineState {
  const lastHeardMs = machine.lastHeardAt.getTime();
  const lastShown = shownMachine(shown, machine.name);
  const state = machineState(lastHeardMs, judging);
  return lastShown ? flooredState(state, lastHeardMs, { state: lastShown.state, lastHeardMs: Date.parse(lastShown.lastHeardAt) }) : state;
}

/**
 * Every machine, by name, of one site and in one state when asked: last-heard and state as every
 * reader shows them (`heardAsShown`, `stateAsShown`), not the store's checkpoint. One statement.
 */
export async function machinesAsShown(db: Db, filter: MachineFilter, reading: MachineReading): Promise<Machine[]> {
  const machines = await listMachines(db, { site: filter.site }, heardAsShown(reading));
  const state = filter.state;
  return state ? machines.filter((m) => stateAsShown(m, state.judging, reading.shown) === state.is) : machines;
}

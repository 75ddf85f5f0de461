import { byName, nameIndex } from '../../../kernel/names.js';
import type { Holding } from '../../seats/holdings.js';
import type { HolderStatus, MachineStatus, SeatStatus } from '../composition.js';

// A seat's holders as the composing view keeps them: sorted by machine, then module, and swapped
// machine by machine when news changes what a machine holds (src/services/status/composing/incremental.ts).

/** A holding as a composition needs it. */
export type Held = Pick<Holding, 'seat' | 'machine' | 'module' | 'site' | 'derived'>;

/** Files `h` under its machine in `byMachine`, after the ones filed before. */
export const fileByMachine = (byMachine: Map<string, Held[]>, h: Held): void => {
  const of = byMachine.get(h.machine);
  if (of) of.push(h);
  else byMachine.set(h.machine, [h]);
};

/** Holdings by machine, in the order given. */
export const holdingsOf = (holdings: readonly Held[]): Map<string, Held[]> => {
  const byMachine = new Map<string, Held[]>();
  for (const h of holdings) fileByMachine(byMachine, h);
  return byMachine;
};

/** A seat's holders' order: by machine, then module, in name order. */
export const byHolder = (a: HolderStatus, b: HolderStatus): number => byName(a.machine, b.machine) || byName(a.module, b.module);

/** A holder's machine, the first key of a seat's holders' order. */
const machineOf = (h: HolderStatus): string => h.machine;

/** A seat's status from its holders. */
export const seatStatus = (name: string, holders: HolderStatus[]): SeatStatus => ({ name, held: holders.length > 0, holders });

/** Whether a machine read again holds what it held, at the same site: its seats' holders are unchanged. */
export function holdsAsBefore(shown: MachineStatus, site: string | null, held: readonly Held[]): boolean {
  if (shown.site !== site || shown.holdings.length !== held.length) return false;
  for (let i = 0; i < held.length; i++) {
    const a = shown.holdings[i]!;
    const b = held[i]!;
    if (a.seat !== b.seat || a.module !== b.module || a.derived !== b.derived) return false;
  }
  return true;
}

/**
 * `holders` (sorted by holder) with every holder of the machines `machines` (sorted by name)
 * swapped for `arriving` (theirs, sorted by holder): a new list, the old one left as it is (a
 * composition shown holds it).
 */
export function swapHolders(holders: readonly HolderStatus[], machines: readonly string[], arriving: readonly HolderStatus[]): HolderStatus[] {
  // The runs to copy, found first (from and to, of `holders` or of `arriving`), then copied once
  // into a list of their whole length: pushing a million holders one by one took 140-650 ms.
  const runs: [list: readonly HolderStatus[], from: number, to: number][] = [];
  let length = 0;
  const run = (list: readonly HolderStatus[], from: number, to: number) => {
    if (to > from) runs.push([list, from, to]);
    length += to - from;
  };
  let from = 0;
  let j = 0;
  for (const machine of machines) {
    const lo = nameIndex(holders, machineOf, machine, from);
    const hi = nameIndex(holders, machineOf, machine, lo, true);
    run(holders, from, lo);
    const first = j;
    while (j < arriving.length && byName(arriving[j]!.machine, machine) <= 0) j++;
    run(arriving, first, j);
    from = hi;
  }
  run(holders, from, holders.length);
  run(arriving, j, arriving.length);
  const out = new Array<HolderStatus>(length);
  let at = 0;
  for (const [list, start, to] of runs) for (let i = start; i < to; i++) out[at++] = list[i]!;
  return out;
}

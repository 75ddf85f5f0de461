import type { MachineState } from '../../machines/machines.js';
import type { MachineStatus } from '../composition.js';

/**
 * A machine keeps at most this many changes (state, site or modules): one flapping every
 * composition (4 a second) would otherwise hold 345,600 a day. Past it the oldest eighth goes, and
 * its history starts at the first kept (`MachineChanges.changesOf`).
 */
export const MACHINE_CHANGES_KEPT_MAX = 2_000;

/** What a change says of a machine: null state when it left the compositions. */
export interface MachineValue {
  state: MachineState | null;
  site: string | null;
  modules: string[];
}

/** One change as kept: the composition that first showed it, and the machine's last-heard instant then. */
export interface KeptChange extends MachineValue {
  seq: number;
  /** That composition's composedAt, ms. */
  at: number;
  lastHeardAt: number | null;
}

// A change is four numbers in the machine's one array: seq, composedAt (ms), lastHeardAt (ms, NaN
// for none) and the id of its value (state, site, modules), interned: a mesh has few of them.
const WIDTH = 4;
/** Lists up to this many numbers (16 changes) are kept at exactly their length; longer ones grow by push. */
const EXACT_LENGTH_UNTIL = 64;
/** One string per value, for interning. */
const valueKey = (m: MachineValue): string => `${m.state ?? ''}\u0000${m.site ?? ''}\u0000${m.modules.join('\u0000')}`;
/** Whether a machine shows the value kept: its state, site and modules. */
const sameValue = (v: MachineValue, m: MachineStatus): boolean =>
  v.state === m.state && v.site === (m.site ?? null) && v.modules.length === m.modules.length && v.modules.every((x, i) => x === m.modules[i]);
const ABSENT: MachineValue = Object.freeze({ state: null, site: null, modules: Object.freeze([]) as unknown as string[] });

/**
 * Each machine's changes as the compositions showed them, oldest first, in four numbers each: the
 * look back's index (docs/status.md, "Looking back"). Nothing is kept of a composition that
 * changes only a machine's last-heard instant. Changes are recorded in seq order; older ones go
 * past `trim`'s instant (the state in force then is kept) and past MACHINE_CHANGES_KEPT_MAX.
 */
export class MachineChanges {
  private readonly byName = new Map<string, number[]>();
  private readonly values: MachineValue[] = [ABSENT];
  private readonly valueIds = new Map<string, number>([[valueKey(ABSENT), 0]]);
  /** Machines whose oldest changes went past MACHINE_CHANGES_KEPT_MAX: their history starts later. */
  private readonly cut = new Set<string>();
  private cutoff = Number.NEGATIVE_INFINITY;

  /** How many machines are indexed. */
  get machines(): number {
    return this.byName.size;
  }

  /** How many machines the last change of each shows in the compositions. */
  shown = 0;

  /** The value a machine had in the last change recorded, ABSENT when none. */
  private lastId(list: number[] | undefined): number {
    return list?.length ? list[list.length - 1]! : 0;
  }

  /**
   * Records what composition `seq` (composed at `at`) showed of machine `name` (undefined: not in
   * it); nothing when its state, site and modules are those of its last change.
   */
  record(name: string, seq: number, at: number, machine: MachineStatus | undefined): void {
    const list = this.byName.get(name);
    const last = this.lastId(list);
    // Compared field by field first: most machines of a composition compared whole have not changed.
    if (machine ? last !== 0 && sameValue(this.values[last]!, machine) : last === 0) return;
    const id = machine ? this.idOf({ state: machine.state, site: machine.site ?? null, modules: machine.modules }) : 0;
    if (id === last) return;
    if ((last === 0) !== (id === 0)) this.shown += id === 0 ? -1 : 1;
    const heard = machine ? Date.parse(machine.lastHeardAt) : Number.NaN;
    // A short list is copied to exactly its length: a pushed array keeps room to grow (half as much
    // again), much of the memory of a million machines of a few changes each. A long one is pushed
    // to, so a flapping machine's change is not a copy of all its changes.
    let next: number[];
    if (!list) next = [seq, at, heard, id];
    else if (list.length < EXACT_LENGTH_UNTIL) next = list.concat(seq, at, heard, id);
    else next = (list.push(seq, at, heard, id), list);
    if (next !== list) this.byName.set(name, next);
    this.forget(name, next);
  }

  /** Every machine indexed, with whether its last change shows it in the compositions. */
  *names(): Generator<[string, boolean]> {
    for (const [name, list] of this.byName) yield [name, this.lastId(list) !== 0];
  }

  /** Changes before instant `t` (ms) go; the state in force at it is kept. */
  trim(t: number): void {
    this.cutoff = Math.max(this.cutoff, t);
  }

  /** Drops what `trim` and MACHINE_CHANGES_KEPT_MAX let go, from one machine's list (done as it changes). */
  private forget(name: string, list: number[]): void {
    let drop = 0;
    while (drop + WIDTH < list.length && list[drop + WIDTH + 1]! <= this.cutoff) drop += WIDTH;
    // Past the maximum an eighth of it goes at once, so a flapping machine's list is not moved on every change.
    if (list.length / WIDTH > MACHINE_CHANGES_KEPT_MAX) {
      drop = Math.max(drop, list.length - Math.floor((MACHINE_CHANGES_KEPT_MAX * 7) / 8) * WIDTH);
      this.cut.add(name);
    }
    if (drop) list.splice(0, drop);
  }

  private idOf(m: MachineValue): number {
    const key = valueKey(m);
    let id = this.valueIds.get(key);
    if (id === undefined) {
      id = this.values.length;
      this.values.push(Object.freeze({ state: m.state, site: m.site, modules: Object.freeze([...m.modules]) as unknown as string[] }));
      this.valueIds.set(key, id);
    }
    return id;
  }

  private change(list: number[], i: number): KeptChange {
    const heard = list[i + 2]!;
    return { seq: list[i]!, at: list[i + 1]!, lastHeardAt: Number.isNaN(heard) ? null : heard, ...this.values[list[i + 3]!]! };
  }

  /**
   * Machine `name` in force at composition `seq` (its last change at or before it), then its changes
   * after `seq` up to `untilSeq`, at most `max` in all. `from` is undefined when the index cannot
   * say what it was at `seq`: its oldest changes went (MACHINE_CHANGES_KEPT_MAX), and the first
   * change listed is then its oldest kept.
   */
  changesOf(name: string, seq: number, untilSeq: number, max: number): { from: KeptChange | undefined; after: KeptChange[] } {
    const list = this.byName.get(name) ?? [];
    // The last change at or before `seq`, by binary search over the changes.
    let lo = 0;
    let hi = list.length / WIDTH - 1;
    let at = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid * WIDTH]! <= seq) {
        at = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    const known = at >= 0 || !this.cut.has(name);
    const from = at >= 0 ? this.change(list, at * WIDTH) : known ? { seq, at: Number.NaN, lastHeardAt: null, ...ABSENT } : undefined;
    const after: KeptChange[] = [];
    for (let i = (at + 1) * WIDTH; i < list.length && list[i]! <= untilSeq && after.length < max; i += WIDTH) after.push(this.change(list, i));
    return { from, after };
  }

  /**
   * Takes in the changes `older` recorded before this index's first composition `seq` (composed
   * at `at`; a backfill from the stream): for each machine, its older changes before its own. This
   * index recorded that composition whole, so a machine it did not show then had left it; a first
   * change here that only repeats the last older one goes.
   */
  prepend(older: MachineChanges, seq: number, at: number): void {
    for (const [name, oldList] of older.byName) {
      const mine = this.byName.get(name) ?? [];
      const merged: number[] = [];
      for (let i = 0; i < oldList.length && oldList[i]! < seq; i += WIDTH) {
        const c = older.change(oldList, i);
        merged.push(c.seq, c.at, c.lastHeardAt ?? Number.NaN, this.idOf(c));
      }
      const lastOld = merged.length ? merged[merged.length - 1]! : 0;
      if (lastOld !== 0 && mine[0] !== seq && Number.isFinite(seq)) merged.push(seq, at, Number.NaN, 0);
      if (mine.length && merged.length && merged[merged.length - 1] === mine[3]) mine.splice(0, WIDTH);
      const list = merged.concat(mine);
      if (!list.length) continue;
      this.byName.set(name, list);
      if (older.cut.has(name)) this.cut.add(name);
      this.forget(name, list);
    }
    this.shown = 0;
    for (const [, shown] of this.names()) if (shown) this.shown++;
  }
}

import { byName } from '../../kernel/names.js';
import { LATE_AFTER_INTERVALS, type MachineState, SILENT_AFTER_INTERVALS } from '../machines/machines.js';
import type { Holding } from '../seats/holdings.js';
import type { HolderStatus, MachineStatus, SeatStatus } from './composition.js';

/** One machine as the store answers it for a composition: instants are ISO strings, modules sorted. */
export interface MachineRow {
  name: string;
  site: string | null;
  lastHeardAt: string;
  modules: string[];
}

/** The module a serving replica holds the controller's own seat as, in a composition. */
const GATEWAY_MODULE = 'mesh-gateway';

/** `machineState` on epoch milliseconds: the view judges every machine of a composition, so no Date per machine. */
function stateAt(heardMs: number, nowMs: number, heartbeatSeconds: number): MachineState {
  const age = (nowMs - heardMs) / 1000;
  if (age > SILENT_AFTER_INTERVALS * heartbeatSeconds) return 'SILENT';
  if (age > LATE_AFTER_INTERVALS * heartbeatSeconds) return 'LATE';
  return 'UP';
}

interface Entry {
  status: MachineStatus;
  heardMs: number;
}

const holdingsOf = (holdings: readonly Holding[]): Map<string, Holding[]> => {
  const byMachine = new Map<string, Holding[]>();
  for (const h of holdings) {
    const of = byMachine.get(h.machine);
    if (of) of.push(h);
    else byMachine.set(h.machine, [h]);
  }
  return byMachine;
};

const byHolder = (a: HolderStatus, b: HolderStatus): number => byName(a.machine, b.machine) || byName(a.module, b.module);

/**
 * The mesh as the last composition saw it, kept in memory by the serving replica so a composition
 * after news costs what the news touched: `replace` swaps in the machines a batch named (their
 * row, modules and holdings, read again from the store) and the seats those holdings name; every
 * other machine and seat keeps its value, the very same object, from one composition to the next.
 * Built from the full read (`of`), so both paths share one way of turning rows into statuses:
 * the full composition and the incremental one are the same value (test/incremental-composition).
 * Seats (names and order) come only from a full read: news never changes them.
 */
export class MeshView {
  private entries: Entry[] = [];
  private index = new Map<string, number>();
  /** Each seat's holders on record or derived (never the composing replica's own), by machine then module. */
  private holders = new Map<string, HolderStatus[]>();
  private seatIndex = new Map<string, number>();
  private seatStatuses: SeatStatus[] = [];

  /** The view of a full read: every machine (by name), every holding (by seat, machine, module), seat names in the store's order. */
  static of(machines: readonly MachineRow[], holdings: readonly Holding[], seatNames: readonly string[]): MeshView {
    const view = new MeshView();
    const byMachine = holdingsOf(holdings);
    view.entries = machines.map((row) => view.entry(row, byMachine.get(row.name) ?? []));
    view.reindex();
    for (const h of holdings) {
      let of = view.holders.get(h.seat);
      if (!of) view.holders.set(h.seat, (of = []));
      of.push({ machine: h.machine, module: h.module, site: h.site, derived: h.derived });
    }
    view.seatStatuses = seatNames.map((name, i) => {
      view.seatIndex.set(name, i);
      return seatStatus(name, view.holders.get(name) ?? []);
    });
    return view;
  }

  private reindex(): void {
    this.index.clear();
    for (let i = 0; i < this.entries.length; i++) this.index.set(this.entries[i]!.status.name, i);
  }

  get size(): number {
    return this.entries.length;
  }

  private entry(row: MachineRow, holdings: readonly Holding[]): Entry {
    const heard = new Date(row.lastHeardAt);
    return {
      heardMs: heard.getTime(),
      status: {
        name: row.name,
        site: row.site,
        state: 'UP', // judged at each composition (`machines`)
        lastHeardAt: heard.toISOString(),
        modules: row.modules,
        holdings: holdings.map((h) => ({ seat: h.seat, module: h.module, derived: h.derived })),
      },
    };
  }

  /**
   * Replaces the machines `names` with what the store holds now: `rows` (a name without a row is
   * gone) and all their holdings. Seats whose holders involve them are rebuilt; a machine new to
   * the view is merged into the name order.
   */
  replace(names: Iterable<string>, rows: readonly MachineRow[], holdings: readonly Holding[]): void {
    const rowOf = new Map(rows.map((r) => [r.name, r]));
    const byMachine = holdingsOf(holdings);
    const touched = new Set(names);
    const seats = new Set<string>();
    const added: Entry[] = [];
    let removed = false;
    for (const name of touched) {
      const at = this.index.get(name);
      const before = at === undefined ? undefined : this.entries[at]!;
      for (const h of before?.status.holdings ?? []) seats.add(h.seat);
      const row = rowOf.get(name);
      const held = byMachine.get(name) ?? [];
      for (const h of held) seats.add(h.seat);
      if (!row) {
        if (at !== undefined) {
          this.entries[at] = undefined as unknown as Entry;
          removed = true;
        }
        continue;
      }
      const entry = this.entry(row, held);
      if (at === undefined) added.push(entry);
      else this.entries[at] = entry;
    }
    if (removed) this.entries = this.entries.filter((e) => e !== undefined);
    if (added.length) this.entries = mergeSorted(this.entries, added.sort(byEntryName), byEntryName);
    if (removed || added.length) this.reindex();
    const arriving = new Map<string, HolderStatus[]>();
    for (const name of touched) {
      for (const h of byMachine.get(name) ?? []) {
        let of = arriving.get(h.seat);
        if (!of) arriving.set(h.seat, (of = []));
        of.push({ machine: h.machine, module: h.module, site: h.site, derived: h.derived });
      }
    }
    for (const seat of seats) {
      // A seat may have 100,000 holders: the kept ones stay in order, only those arriving are sorted.
      const kept = mergeSorted(
        (this.holders.get(seat) ?? []).filter((h) => !touched.has(h.machine)),
        (arriving.get(seat) ?? []).sort(byHolder),
        byHolder,
      );
      if (kept.length) this.holders.set(seat, kept);
      else this.holders.delete(seat);
      const at = this.seatIndex.get(seat);
      if (at !== undefined) this.seatStatuses[at] = seatStatus(seat, kept);
    }
  }

  /**
   * Every machine judged UP, LATE or SILENT at `nowMs`; a machine whose state did not change keeps
   * its object. The same pass finds the earliest instant one will change by age alone (`crossingMs`).
   */
  machines(nowMs: number, heartbeatSeconds: number): MachineStatus[] {
    const out = new Array<MachineStatus>(this.entries.length);
    const lateMs = LATE_AFTER_INTERVALS * heartbeatSeconds * 1000;
    const silentMs = SILENT_AFTER_INTERVALS * heartbeatSeconds * 1000;
    let earliest = Number.POSITIVE_INFINITY;
    for (let i = 0; i < this.entries.length; i++) {
      const entry = this.entries[i]!;
      const state = stateAt(entry.heardMs, nowMs, heartbeatSeconds);
      if (state !== entry.status.state) entry.status = { ...entry.status, state };
      out[i] = entry.status;
      // As nextStateChangeAt: the LATE boundary until it is passed, then the SILENT one, then none.
      const next = nowMs <= entry.heardMs + lateMs ? entry.heardMs + lateMs : nowMs <= entry.heardMs + silentMs ? entry.heardMs + silentMs : undefined;
      if (next !== undefined && next < earliest) earliest = next;
    }
    this.crossingMs = earliest === Number.POSITIVE_INFINITY ? undefined : earliest;
    return out;
  }

  /** After `machines`: when the earliest machine next changes state by age alone; undefined when none will. */
  crossingMs: number | undefined;

  /** Every seat, its holders; the controller's own seat held by the composing replica when nothing else holds it. */
  seats(controller: string, servingReplica: string | undefined): SeatStatus[] {
    const out = this.seatStatuses.slice();
    const at = this.seatIndex.get(controller);
    if (servingReplica && at !== undefined && !this.holders.get(controller)?.length) {
      out[at] = seatStatus(controller, [{ machine: servingReplica, module: GATEWAY_MODULE, site: null, derived: true }]);
    }
    return out;
  }
}

const seatStatus = (name: string, holders: HolderStatus[]): SeatStatus => ({ name, held: holders.length > 0, holders });

/** Two lists sorted by `order` merged into one, in one pass. */
function mergeSorted<T>(a: T[], b: readonly T[], order: (x: T, y: T) => number): T[] {
  if (b.length === 0) return a;
  const out: T[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) out.push(order(a[i]!, b[j]!) <= 0 ? a[i++]! : b[j++]!);
  while (i < a.length) out.push(a[i++]!);
  while (j < b.length) out.push(b[j++]!);
  return out;
}

const byEntryName = (a: Entry, b: Entry): number => byName(a.status.name, b.status.name);

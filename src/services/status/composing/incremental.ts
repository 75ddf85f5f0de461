import { Pacer, pacedEach, pacedMap } from '../../../kernel/pacer.js';
import { type DeafSpan, flooredState, type Judging, type MachineState, machineState, nextStateChangeMs, sameDeafSpans } from '../../machines/machines.js';
import { type Composition, LAST_HEARD_GRAIN_MS, type MachineStatus, type SeatStatus, sameModules } from '../composition.js';
import { CrossingHeap } from './crossing-heap.js';
import { byEntryName, type Entry, mergeSorted, withJudged } from './entries.js';
import { fileByMachine, type Held, holdingsOf, holdsAsBefore } from './holders.js';
import { type ClaimsOf, SeatsView } from './seats-view.js';

/** One machine as the store answers it for a composition: instants are ISO strings, modules sorted. */
export interface MachineRow {
  name: string;
  site: string | null;
  lastHeardAt: string;
  modules: string[];
}

/** One machine as the incremental read answers it: its row, every running module with its claims, its holdings on record. */
export type TouchedRow = MachineRow & ClaimsOf;

/**
 * The mesh as the last composition saw it, kept in memory by the serving replica so a composition
 * after news costs what the news touched: `replace` swaps in the machines a batch named (their
 * row, modules and holdings, read again from the store) and the seats those holdings name; every
 * other machine and seat keeps its value, the very same object, from one composition to the next.
 * Built from the full read (`of`), so both paths share one way of turning rows into statuses:
 * the full composition and the incremental one are the same value (test/services/status/incremental-composition.test.ts).
 * The seats and their holders are its `SeatsView` (seats-view.ts).
 */
export class MeshView {
  private entries: Entry[] = [];
  private index = new Map<string, number>();
  /**
   * Every judged machine by the instant its state next changes: a composition judges again only
   * those whose instant the watermark passed, and the machines news replaced (`unjudged`), not a
   * million every time — unless the deaf spans changed since the last judging (`judgedDeaf`),
   * which can move any machine's instants: then every machine is judged again.
   */
  private readonly heap = new CrossingHeap<Entry>();
  private unjudged: Entry[] = [];
  private judgedDeaf: readonly DeafSpan[] | undefined = undefined;
  private judgedOnce = false;
  /** The machines the last composition showed; undefined once a machine joined or left since. */
  private shown: MachineStatus[] | undefined;
  private seatsView = new SeatsView();

  /** The view of a full read: every machine (by name), every holding (by seat, machine, module), seat names in the store's order. */
  static async of(
    machines: readonly MachineRow[],
    holdings: readonly Held[],
    seatNames: readonly string[],
    aliases: readonly [alias: string, seat: string][],
    shown?: readonly MachineStatus[],
    pacer = new Pacer(),
  ): Promise<MeshView> {
    const view = new MeshView();
    view.seatsView = await SeatsView.of(holdings, seatNames, aliases, pacer);
    const byMachine = new Map<string, Held[]>();
    await pacedEach(holdings, pacer, (h) => fileByMachine(byMachine, h));
    view.entries = await pacedMap(machines, pacer, (row) => view.entry(row, byMachine.get(row.name) ?? []));
    await view.reindexPaced(pacer);
    // What the last composition (whichever replica made it) showed is the floor of each state.
    // And its instant, when not later, the one the grain of `hearLater` counts from.
    await pacedEach(shown ?? [], pacer, (machine) => {
      const at = view.index.get(machine.name);
      if (at === undefined) return;
      const entry = view.entries[at]!;
      const shownMs = Date.parse(machine.lastHeardAt);
      entry.status.state = flooredState('UP', entry.heardMs, { state: machine.state, lastHeardMs: shownMs });
      if (shownMs <= entry.heardMs) entry.shownMs = shownMs;
    });
    return view;
  }

  /**
   * The view a composition shows (a takeover's: the last composition this replica followed, made
   * by the replica that served), without reading the store: each machine as shown, each seat with
   * its holders (the serving replica's own holding of the controller's seat left out, as
   * `seats` adds it), the seats and `aliases` to resolve claims by. The machines news changed since
   * it was composed are read again by the incremental composition that follows (`composeFromShown`).
   */
  static async fromComposition(
    c: Pick<Composition, 'machines' | 'seats'>,
    aliases: readonly [alias: string, seat: string][],
    controller: string,
    pacer = new Pacer(),
  ): Promise<MeshView> {
    const view = new MeshView();
    view.entries = await pacedMap(c.machines, pacer, (status) => {
      const heardMs = Date.parse(status.lastHeardAt);
      return { status, heardMs, shownMs: heardMs, nextMs: Number.POSITIVE_INFINITY, heapAt: -1 };
    });
    await view.reindexPaced(pacer);
    view.seatsView = SeatsView.fromComposition(c.seats, aliases, controller, (name) => view.index.has(name));
    return view;
  }

  /** Whether the view holds `name` heard before `lastMs`: `hearLater` would change it. */
  heardBefore(name: string, lastMs: number): boolean {
    const at = this.index.get(name);
    return at !== undefined && lastMs > this.entries[at]!.heardMs;
  }

  /**
   * Takes `lastMs` as `name`'s last-heard when it is later than the view's (a beat that changed
   * nothing stored; a takeover's memory of a beat the composition it started from did not show
   * yet); judged at the next composition. A machine shown UP and heard less than
   * LAST_HEARD_GRAIN_MS after the instant shown keeps its status object, as the publisher would
   * keep it (`coarsenLastHeard`): nearly every beat then changes nothing a composition holds, and
   * is neither copied, compared nor sent. Otherwise what was shown is no floor for a newer instant,
   * so its state starts over as a new row's does. False when the view does not hold `name`.
   */
  hearLater(name: string, lastMs: number): boolean {
    const at = this.index.get(name);
    if (at === undefined) return false;
    const entry = this.entries[at]!;
    if (lastMs <= entry.heardMs) return true;
    this.heap.remove(entry);
    const sooner = entry.status.state === 'UP' && lastMs - entry.shownMs < LAST_HEARD_GRAIN_MS;
    const later: Entry = sooner
      ? { status: entry.status, heardMs: lastMs, shownMs: entry.shownMs, nextMs: Number.POSITIVE_INFINITY, heapAt: -1 }
      : {
          status: { ...entry.status, state: 'UP', lastHeardAt: new Date(lastMs).toISOString() },
          heardMs: lastMs,
          shownMs: lastMs,
          nextMs: Number.POSITIVE_INFINITY,
          heapAt: -1,
        };
    this.entries[at] = later;
    this.unjudged.push(later);
    return true;
  }

  /** How many machines the view holds. */
  get size(): number {
    return this.entries.length;
  }

  private reindex(): void {
    this.index.clear();
    for (let i = 0; i < this.entries.length; i++) this.index.set(this.entries[i]!.status.name, i);
  }

  /** `reindex`, giving the loop its turns: a view built whole (`of`, `fromComposition`) indexes every machine. */
  private async reindexPaced(pacer: Pacer): Promise<void> {
    this.index.clear();
    for (let i = 0; i < this.entries.length; i++) {
      this.index.set(this.entries[i]!.status.name, i);
      if (pacer.due()) await pacer.turn();
    }
  }

  /** A machine's entry; `asBefore` (its status before, holding as it does now) lends its lists, so a beat makes no new ones. */
  private entry(row: MachineRow, holdings: readonly Held[], asBefore?: MachineStatus): Entry {
    const heard = new Date(row.lastHeardAt);
    return {
      heardMs: heard.getTime(),
      shownMs: heard.getTime(),
      nextMs: Number.POSITIVE_INFINITY,
      heapAt: -1,
      status: {
        name: row.name,
        site: row.site,
        state: 'UP', // judged at each composition (`machines`)
        lastHeardAt: heard.toISOString(),
        modules: asBefore && sameModules(asBefore.modules, row.modules) ? asBefore.modules : row.modules,
        holdings: asBefore ? asBefore.holdings : holdings.map((h) => ({ seat: h.seat, module: h.module, derived: h.derived })),
      },
    };
  }

  /**
   * Replaces the machines `names` with what the store holds now: `rows` (a name without a row is
   * gone) and all their holdings. Seats whose holders involve them are rebuilt; a machine new to
   * the view is merged into the name order.
   */
  replace(names: Iterable<string>, rows: readonly MachineRow[], holdings: readonly Held[]): void {
    const rowOf = new Map(rows.map((r) => [r.name, r]));
    const byMachine = holdingsOf(holdings);
    const touched = new Set(names);
    /** Each seat whose holders change, and the machines whose holders in it are swapped. */
    const seats = new Map<string, Set<string>>();
    const swapIn = (seat: string, machine: string) => {
      const of = seats.get(seat);
      if (of) of.add(machine);
      else seats.set(seat, new Set([machine]));
    };
    const added: Entry[] = [];
    let removed = false;
    for (const name of touched) {
      const at = this.index.get(name);
      const before = at === undefined ? undefined : this.entries[at]!;
      const row = rowOf.get(name);
      const held = byMachine.get(name) ?? [];
      // A beat that changed neither site nor holdings (nearly every one) leaves every seat as it was.
      const holdsSame = before !== undefined && row !== undefined && holdsAsBefore(before.status, row.site, held);
      if (!holdsSame) {
        for (const h of before?.status.holdings ?? []) swapIn(h.seat, name);
        for (const h of held) swapIn(h.seat, name);
      }
      if (!row) {
        if (at !== undefined) {
          this.heap.remove(this.entries[at]!);
          this.entries[at] = undefined as unknown as Entry;
          removed = true;
        }
        continue;
      }
      const entry = this.entry(row, held, holdsSame ? before!.status : undefined);
      // Read again with the same last-heard instant: what was shown of it stays its floor.
      if (before && before.heardMs === entry.heardMs) entry.status.state = before.status.state;
      // Last-heard never moves back: a view started from a composition another replica made may
      // hold a beat this replica's memory has not read yet (`fromComposition`).
      if (before && before.heardMs > entry.heardMs) {
        entry.heardMs = before.heardMs;
        entry.status.lastHeardAt = before.status.lastHeardAt;
        entry.status.state = before.status.state;
      }
      if (before) entry.shownMs = Math.min(entry.heardMs, before.shownMs);
      if (before) this.heap.remove(before);
      this.unjudged.push(entry);
      if (at === undefined) added.push(entry);
      else this.entries[at] = entry;
    }
    if (removed) this.entries = this.entries.filter((e) => e !== undefined);
    if (added.length) this.entries = mergeSorted(this.entries, added.sort(byEntryName), byEntryName);
    if (removed || added.length) {
      this.reindex();
      this.shown = undefined;
    }
    this.seatsView.swap(seats, byMachine);
  }

  /**
   * Replaces the machines `names` from what the incremental read answered: their holdings derived
   * from their claims and holdings on record as listHoldings derives them (`SeatsView.holdingsOf`).
   */
  replaceTouched(names: readonly string[], rows: readonly TouchedRow[]): void {
    this.replace(names, rows, this.seatsView.holdingsOf(rows));
  }

  /**
   * The machines whose state would move on (UP → LATE, LATE → SILENT) if judged as `judging` says:
   * an incremental composition reads them again before it says so, since news about them may have
   * been written after the view read them (no news is told to the composer before it is written,
   * but it may be told after the watermark shows it written).
   */
  async crossingBy(judging: Judging, pacer: Pacer): Promise<string[]> {
    if (this.crossingMs === undefined || this.crossingMs > judging.heardUntilMs) return [];
    const names: string[] = [];
    if (!this.judgesOnlyCrossing(judging)) {
      await pacedEach(this.entries, pacer, (entry) => {
        if (this.stateOf(entry, judging) !== entry.status.state) names.push(entry.status.name);
      });
      return names;
    }
    for (const entry of this.heap.below(judging.heardUntilMs)) if (this.stateOf(entry, judging) !== entry.status.state) names.push(entry.status.name);
    return names;
  }

  /**
   * A machine's state at `judging`, never better than the one last shown for the same last-heard
   * instant (`flooredState`): a deaf span learned later may delay LATE and SILENT, never undo them.
   */
  private stateOf(entry: Entry, judging: Judging): MachineState {
    return flooredState(machineState(entry.heardMs, judging), entry.heardMs, { state: entry.status.state, lastHeardMs: entry.heardMs });
  }

  /** Whether only the machines in the heap past their instant need judging: the deaf spans are those of the last judging. */
  private judgesOnlyCrossing(judging: Judging): boolean {
    return this.judgedOnce && sameDeafSpans(this.judgedDeaf, judging.deaf);
  }

  /** Judges `entry` at `judging` (a new object when its state changed) and files it in the heap by its next instant. */
  private judge(entry: Entry, judging: Judging): void {
    const state = this.stateOf(entry, judging);
    // A change of state is shown with the true instant, as the publisher shows it.
    if (state !== entry.status.state) {
      entry.status = {
        ...entry.status,
        state,
        lastHeardAt: entry.shownMs === entry.heardMs ? entry.status.lastHeardAt : new Date(entry.heardMs).toISOString(),
      };
      entry.shownMs = entry.heardMs;
    }
    entry.nextMs = (state === 'SILENT' ? undefined : nextStateChangeMs(entry.heardMs, judging)) ?? Number.POSITIVE_INFINITY;
    if (entry.nextMs === Number.POSITIVE_INFINITY) this.heap.remove(entry);
    else this.heap.file(entry);
  }

  /**
   * Every machine judged UP, LATE or SILENT (`machineState`, floored by what was shown); a machine
   * whose state did not change keeps its object. Judged again: the machines news replaced, and
   * those whose next instant the watermark passed (`heap`); every machine when the deaf spans
   * changed. The earliest next instant is `crossingMs`.
   */
  async machines(judging: Judging, pacer: Pacer): Promise<MachineStatus[]> {
    let judged: Entry[] | undefined;
    if (!this.judgesOnlyCrossing(judging)) {
      // Every machine, at a million: the loop gets its turns. The view is the composer's alone, one composition at a time.
      await pacedEach(this.entries, pacer, (entry) => this.judge(entry, judging));
      this.judgedDeaf = judging.deaf;
      this.judgedOnce = true;
    } else {
      // A machine replaced twice since, or removed, is no longer the view's.
      const replaced = this.unjudged.filter((entry) => this.entries[this.index.get(entry.status.name) ?? -1] === entry);
      for (const entry of replaced) this.judge(entry, judging);
      const crossing = this.heap.below(judging.heardUntilMs);
      for (const entry of crossing) this.judge(entry, judging);
      judged = replaced.concat(crossing);
    }
    this.unjudged = [];
    // The list shown before, copied, with the machines judged again put in: at a million machines a
    // copy of the list is 4 ms where reading every machine's status again was 17 ms.
    this.shown = judged && this.shown ? withJudged(this.shown, judged, this.index) : await pacedMap(this.entries, pacer, (entry) => entry.status);
    this.crossingMs = this.heap.earliest();
    return this.shown;
  }

  /** After `machines`: the heard instant at which the earliest machine next changes state by age alone; undefined when none will. */
  crossingMs: number | undefined;

  /** Every seat, its holders; the controller's own seat held by the composing replica when nothing else holds it. */
  seats(controller: string, servingReplica: string | undefined): SeatStatus[] {
    return this.seatsView.statusesFor(controller, servingReplica);
  }
}

import { byName } from '../../../kernel/names.js';
import { type Pacer, pacedEach } from '../../../kernel/pacer.js';
import type { HolderStatus, SeatStatus } from '../composition.js';
import { byHolder, type Held, seatStatus, swapHolders } from './holders.js';

/** The module a serving replica holds the controller's own seat as, in a composition. */
const GATEWAY_MODULE = 'mesh-gateway';

/** What deriving a machine's holdings reads of it: its running modules' claims and its holdings on record. */
export interface ClaimsOf {
  name: string;
  site: string | null;
  /** Running modules and the seat names or aliases each claims. */
  claims: [module: string, claims: string[]][];
  /** Holdings on record: seat and module. */
  recorded: [seat: string, module: string][];
}

/**
 * The seats as the last composition saw them, kept by `MeshView` beside its machines: each seat's
 * holders on record or derived (never the composing replica's own), by machine then module; each
 * seat name or alias and the seats it names (a claim's key, as listHoldings resolves it); the
 * seats with a holding on record, never derived. Seats (names and order) come only from a full
 * read: news never changes them, only their holders.
 */
export class SeatsView {
  private holders = new Map<string, HolderStatus[]>();
  private seatIndex = new Map<string, number>();
  private statuses: SeatStatus[] = [];
  private keys = new Map<string, string[]>();
  /** Only acting verbs change these (a full composition follows). */
  private recordedSeats = new Set<string>();

  /** The seats of a full read: every holding (by seat, machine, module), seat names in the store's order. */
  static async of(
    holdings: readonly Held[],
    seatNames: readonly string[],
    aliases: readonly [alias: string, seat: string][],
    pacer: Pacer,
  ): Promise<SeatsView> {
    const view = new SeatsView();
    view.learnKeys(seatNames, aliases);
    await pacedEach(holdings, pacer, (h) => {
      if (!h.derived) view.recordedSeats.add(h.seat);
      let of = view.holders.get(h.seat);
      if (!of) view.holders.set(h.seat, (of = []));
      of.push({ machine: h.machine, module: h.module, site: h.site, derived: h.derived });
    });
    view.statuses = seatNames.map((name, i) => {
      view.seatIndex.set(name, i);
      return seatStatus(name, view.holders.get(name) ?? []);
    });
    return view;
  }

  /**
   * The seats a composition shows, with their holders: the serving replica's own holding of the
   * controller's seat (a holder that is no machine of the mesh, `isMachine`) left out, as
   * `statusesFor` adds it.
   */
  static fromComposition(
    seats: readonly SeatStatus[],
    aliases: readonly [alias: string, seat: string][],
    controller: string,
    isMachine: (name: string) => boolean,
  ): SeatsView {
    const view = new SeatsView();
    view.learnKeys(
      seats.map((seat) => seat.name),
      aliases,
    );
    view.statuses = seats.map((seat, i) => {
      view.seatIndex.set(seat.name, i);
      const servingOwn =
        seat.name === controller &&
        seat.holders.length === 1 &&
        seat.holders[0]!.module === GATEWAY_MODULE &&
        seat.holders[0]!.derived &&
        !isMachine(seat.holders[0]!.machine);
      const holders = servingOwn ? [] : seat.holders;
      for (const h of holders) if (!h.derived) view.recordedSeats.add(seat.name);
      if (holders.length) view.holders.set(seat.name, holders);
      return servingOwn ? seatStatus(seat.name, holders) : seat;
    });
    return view;
  }

  private learnKeys(seatNames: readonly string[], aliases: readonly [alias: string, seat: string][]): void {
    for (const name of seatNames) this.keys.set(name, [name]);
    for (const [alias, seat] of aliases) this.keys.set(alias, [...(this.keys.get(alias) ?? []), seat]);
  }

  /**
   * The holdings of `rows`: those on record plus, for a seat with none on record, each running
   * module whose claims name the seat or one of its aliases — listHoldings's rule, applied in
   * memory to the seats and aliases of the full read. Sorted as listHoldings sorts them.
   */
  holdingsOf(rows: readonly ClaimsOf[]): Held[] {
    const holdings: Held[] = [];
    for (const row of rows) {
      for (const [seat, module] of row.recorded) holdings.push({ seat, machine: row.name, module, site: row.site, derived: false });
      for (const [module, claims] of row.claims) {
        const seen = new Set<string>();
        for (const claim of claims) {
          for (const seat of this.keys.get(claim) ?? []) {
            if (this.recordedSeats.has(seat) || seen.has(seat)) continue;
            seen.add(seat);
            holdings.push({ seat, machine: row.name, module, site: row.site, derived: true });
          }
        }
      }
    }
    holdings.sort((a, b) => byName(a.seat, b.seat) || byName(a.machine, b.machine) || byName(a.module, b.module));
    return holdings;
  }

  /** Each seat of `seats` with its named machines' holders swapped for what they hold now (`byMachine`). */
  swap(seats: ReadonlyMap<string, ReadonlySet<string>>, byMachine: ReadonlyMap<string, readonly Held[]>): void {
    for (const [seat, machines] of seats) {
      const arriving: HolderStatus[] = [];
      for (const machine of machines)
        for (const h of byMachine.get(machine) ?? [])
          if (h.seat === seat) arriving.push({ machine: h.machine, module: h.module, site: h.site, derived: h.derived });
      // A seat may have a million holders: the swapped machines' runs are found by binary search,
      // the rest copied as they are, never compared.
      const kept = swapHolders(this.holders.get(seat) ?? [], [...machines].sort(byName), arriving.sort(byHolder));
      if (kept.length) this.holders.set(seat, kept);
      else this.holders.delete(seat);
      const at = this.seatIndex.get(seat);
      if (at !== undefined) this.statuses[at] = seatStatus(seat, kept);
    }
  }

  /** Every seat, its holders; the controller's own seat held by the composing replica when nothing else holds it. */
  statusesFor(controller: string, servingReplica: string | undefined): SeatStatus[] {
    const out = this.statuses.slice();
    const at = this.seatIndex.get(controller);
    if (servingReplica && at !== undefined && !this.holders.get(controller)?.length) {
      out[at] = seatStatus(controller, [{ machine: servingReplica, module: GATEWAY_MODULE, site: null, derived: true }]);
    }
    return out;
  }
}

import type { ListChanges, StatusDelta } from '../delta/delta.js';

/** A subscriber resuming from a seq this recent (10 minutes at 4 compositions a second) gets the deltas since, from memory. */
export const RESUME_DELTAS_MAX = 2_400;
/** ...and the deltas kept hold at most this many items in all, so a burst of whole-mesh changes does not grow memory. */
export const RESUME_ITEMS_MAX = 200_000;

const itemsOf = (d: StatusDelta): number => {
  const count = (c: ListChanges<unknown>) => c.added.length + c.changed.length + c.removed.length + (c.order?.length ?? 0);
  return count(d.machines) + count(d.seats) + count(d.plans) + count(d.repeatedCauses) + count(d.unheldSeats) + 1;
};

/**
 * The deltas of the last compositions this replica holds, one chain ending at the one it holds:
 * what `statusChanges(after:)` resumes from. A composition reached without a delta (a snapshot
 * after a gap, a start) begins a new chain.
 */
export class RecentDeltas {
  private deltas: StatusDelta[] = [];
  private items = 0;

  /** Records the delta that brought the holder to `delta.seq`; undefined: the chain starts again. */
  push(delta: StatusDelta | undefined): void {
    if (!delta || (this.deltas.length && this.deltas[this.deltas.length - 1].seq !== delta.baseSeq)) {
      this.deltas = [];
      this.items = 0;
    }
    if (!delta) return;
    this.deltas.push(delta);
    this.items += itemsOf(delta);
    let drop = 0;
    while (this.deltas.length - drop > RESUME_DELTAS_MAX || (this.items > RESUME_ITEMS_MAX && this.deltas.length - drop > 1)) {
      this.items -= itemsOf(this.deltas[drop]);
      drop++;
    }
    if (drop) this.deltas = this.deltas.slice(drop);
  }

  /** The deltas from composition `seq` to the newest, in order; [] when `seq` is the newest; undefined when not held. */
  after(seq: number, newest: number | undefined): StatusDelta[] | undefined {
    if (seq === newest) return [];
    const at = this.deltas.findIndex((d) => d.baseSeq === seq);
    if (at < 0 || this.deltas[this.deltas.length - 1].seq !== newest) return undefined;
    return this.deltas.slice(at);
  }
}

import { editedPlaces } from '../../../kernel/list-edits.js';
import type { Composition, MachineStatus } from '../composition.js';
import { applyListChanges, type ListChanges, type StatusDelta } from '../delta/delta.js';

/** A composition heard this long after the window's last checkpoint is kept whole (its machines list): a checkpoint. */
export const LOOK_BACK_CHECKPOINT_EVERY_MS = 15_000;
/**
 * What the window may hold, estimated (`RecentWindow.bytes`): past it the oldest checkpoint goes
 * with the compositions stepped from it. At 100,000 machines beating steadily, about seven
 * minutes; at 1,000,000, under one (docs/status.md, "Looking back").
 */
export const LOOK_BACK_WINDOW_BYTES_MAX = 256 * 2 ** 20;
/** ...and at most this many compositions: a quarter of an hour at 4 a second. */
export const LOOK_BACK_WINDOW_COMPOSITIONS_MAX = 3_600;
/**
 * A machine's value as a composition holds it, in bytes of heap (measured: about 306 B parsed from
 * JSON at 100,000 machines, docs/BENCHMARKS.md); a machine changed in the window is counted at it,
 * whether or not the composition held now still shares it.
 */
const MACHINE_BYTES = 320;
/** A composition's stamp and lists' references, as one entry of the window keeps them. */
const FRAME_BYTES = 400;
/** One slot of a machines list kept whole, or of a step's places and items. */
const SLOT_BYTES = 8;
/** A composition changing more than this share of the machines is kept whole: a step would cost as much. */
const STEP_SHARE_MAX = 0.5;

/** The keyed lists besides the machines, kept by reference while a delta says they did not change. */
const OTHER_LISTS = ['seats', 'plans', 'repeatedCauses', 'unheldSeats'] as const;
const EMPTY: MachineStatus[] = Object.freeze([]) as unknown as MachineStatus[];

/**
 * One composition of the window: its stamp and other lists (`frame`, its machines left out), and
 * its machines either whole (a checkpoint), or as a step from the composition before: the places
 * where its list holds other objects, with the items there (a list of the same length), or the
 * delta's changes to the list (machines added or removed).
 */
interface Held {
  seq: number;
  frame: Composition;
  machines?: readonly MachineStatus[];
  places?: Int32Array;
  items?: MachineStatus[];
  changes?: ListChanges<MachineStatus>;
  /** What it is counted at in `bytes`. */
  bytes: number;
}

/** The places (and items) where `after` holds another object than `before` (lists of one length); undefined past `most`. */
function placesChanged(
  before: readonly MachineStatus[],
  after: readonly MachineStatus[],
  most: number,
): { places: Int32Array; items: MachineStatus[] } | undefined {
  const found: number[] = [];
  // The same list (a delta that changed no machine), or one made from `before` by writing a few
  // places (`noteEdits`), can differ there alone.
  const edited = before === after ? [] : editedPlaces(after, before);
  const visits = edited ? edited.length : after.length;
  for (let k = 0; k < visits; k++) {
    const i = edited ? edited[k]! : k;
    if (before[i] === after[i]) continue;
    if (found.length >= most) return undefined;
    found.push(i);
  }
  return { places: Int32Array.from(found), items: found.map((i) => after[i]!) };
}

/**
 * The last minutes of compositions a replica heard, as checkpoints and steps (docs/status.md,
 * "Looking back"): one kept whole every LOOK_BACK_CHECKPOINT_EVERY_MS (and after a gap), and for
 * each one between only its machines that are other objects than in the composition before.
 * Compositions share every machine that did not change (incremental composing and applying a
 * delta keep the same object), so a step costs its changed machines and a checkpoint its list of
 * references. A composition of the window is rebuilt with no stream read and no parse: its
 * checkpoint's list copied and the steps after it written in. Bounded by
 * LOOK_BACK_WINDOW_BYTES_MAX (estimated) and LOOK_BACK_WINDOW_COMPOSITIONS_MAX: the oldest
 * checkpoint goes with its steps.
 */
export class RecentWindow {
  private held: Held[] = [];
  private last: Composition | undefined;
  private lastCheckpointAt = Number.NEGATIVE_INFINITY;
  /** What the window holds, estimated: the unit of its bound. */
  bytes = 0;

  constructor(
    private readonly limits: { bytesMax: number; compositionsMax: number; checkpointEveryMs: number } = {
      bytesMax: LOOK_BACK_WINDOW_BYTES_MAX,
      compositionsMax: LOOK_BACK_WINDOW_COMPOSITIONS_MAX,
      checkpointEveryMs: LOOK_BACK_CHECKPOINT_EVERY_MS,
    },
  ) {}

  /** How many compositions it holds. */
  get size(): number {
    return this.held.length;
  }

  /** How many of them are checkpoints (kept whole). */
  get checkpoints(): number {
    return this.held.reduce((n, h) => n + (h.machines ? 1 : 0), 0);
  }

  /** The first and last seq held, if any. */
  span(): { first: number; last: number } | undefined {
    return this.held.length ? { first: this.held[0]!.seq, last: this.held[this.held.length - 1]!.seq } : undefined;
  }

  /**
   * Takes in composition `c` as the feed hands it (with the delta from the one before, when one
   * brought it): a step from the last heard when the delta follows it, else a checkpoint.
   */
  hear(c: Composition, delta?: StatusDelta): void {
    const before = this.last;
    if (before && c.seq <= before.seq) return;
    this.last = c;
    const at = Date.parse(c.composedAt);
    const previous = this.held[this.held.length - 1];
    const follows = !!before && !!delta && delta.baseSeq === before.seq && delta.seq === c.seq && previous?.seq === before.seq;
    const frame = { ...c, machines: EMPTY } as Composition;
    // A list the delta did not change keeps the reference held before: a replica applying deltas makes every list anew.
    if (follows) for (const list of OTHER_LISTS) if (unchanged(delta!, list)) (frame as unknown as Record<string, unknown>)[list] = previous!.frame[list];
    let bytes = FRAME_BYTES;
    for (const list of OTHER_LISTS) if (!previous || frame[list] !== previous.frame[list]) bytes += SLOT_BYTES * frame[list].length;
    Object.freeze(frame);
    const sameLength = !!before && before.machines.length === c.machines.length;
    let entry: Held | undefined;
    if (follows && at - this.lastCheckpointAt < this.limits.checkpointEveryMs) {
      if (sameLength) {
        const step = placesChanged(before!.machines, c.machines, Math.floor(c.machines.length * STEP_SHARE_MAX));
        if (step) entry = { seq: c.seq, frame, ...step, bytes: bytes + step.places.length * (SLOT_BYTES + 4 + MACHINE_BYTES) };
      } else {
        const changes = delta!.machines;
        const items = changes.added.length + changes.changed.length;
        entry = { seq: c.seq, frame, changes, bytes: bytes + items * (SLOT_BYTES + MACHINE_BYTES) + changes.removed.length * MACHINE_BYTES };
      }
    }
    if (!entry) {
      // Whole: the machines changed since the one before are counted as a step's would be (none for the first heard).
      const changed = !before
        ? 0
        : follows && sameLength
          ? countChanged(before.machines, c.machines)
          : follows
            ? delta!.machines.added.length + delta!.machines.changed.length
            : c.machines.length;
      entry = { seq: c.seq, frame, machines: c.machines, bytes: bytes + c.machines.length * SLOT_BYTES + changed * MACHINE_BYTES };
      this.lastCheckpointAt = at;
    }
    this.held.push(entry);
    this.bytes += entry.bytes;
    this.bound();
  }

  /** Drops the oldest checkpoint with its steps while past a bound; the newest checkpoint and what follows it stay. */
  private bound(): void {
    while (this.bytes > this.limits.bytesMax || this.held.length > this.limits.compositionsMax) {
      let next = 1;
      while (next < this.held.length && !this.held[next]!.machines) next++;
      if (next >= this.held.length) return;
      for (let i = 0; i < next; i++) this.bytes -= this.held[i]!.bytes;
      this.held.splice(0, next);
    }
  }

  /**
   * Composition `seq` as it was heard, rebuilt from the checkpoint before it and the steps after;
   * undefined when the window does not hold it.
   */
  composition(seq: number): Composition | undefined {
    let lo = 0;
    let hi = this.held.length - 1;
    let at = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const s = this.held[mid]!.seq;
      if (s === seq) {
        at = mid;
        break;
      }
      if (s < seq) lo = mid + 1;
      else hi = mid - 1;
    }
    if (at < 0) return undefined;
    let from = at;
    while (from > 0 && !this.held[from]!.machines) from--;
    const checkpoint = this.held[from]!;
    if (!checkpoint.machines) return undefined;
    const target = this.held[at]!;
    if (from === at) return Object.freeze({ ...target.frame, machines: checkpoint.machines as MachineStatus[] });
    let machines = checkpoint.machines.slice();
    for (let i = from + 1; i <= at; i++) {
      const { places, items, changes } = this.held[i]!;
      if (changes) machines = applyListChanges(machines, changes, (m) => m.name);
      else for (let k = 0; k < places!.length; k++) machines[places![k]!] = items![k]!;
    }
    return Object.freeze({ ...target.frame, machines });
  }
}

/** Whether a delta leaves list `list` as it was. */
function unchanged(delta: StatusDelta, list: (typeof OTHER_LISTS)[number]): boolean {
  const c = delta[list];
  return !c.added.length && !c.removed.length && !c.order && !(c as { changed?: unknown[] }).changed?.length;
}

/** How many places hold another object in `after` than in `before` (lists of one length). */
function countChanged(before: readonly MachineStatus[], after: readonly MachineStatus[]): number {
  let n = 0;
  for (let i = 0; i < after.length; i++) if (before[i] !== after[i]) n++;
  return n;
}

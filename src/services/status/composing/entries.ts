import { noteEdits } from '../../../kernel/list-edits.js';
import { byName } from '../../../kernel/names.js';
import type { MachineStatus } from '../composition.js';

// A MeshView's entries (incremental.ts): one per machine, and what is done with their lists.

/** One machine of a MeshView: its status as last shown and its heard instant. */
export interface Entry {
  status: MachineStatus;
  /** The instant it was last heard: its state is judged from it. */
  heardMs: number;
  /**
   * The instant subscribers were last shown it heard (≤ `heardMs`): a beat heard less than
   * LAST_HEARD_GRAIN_MS after it, of a machine shown UP, keeps the status object as it is.
   */
  shownMs: number;
  /** The heard instant past which its state next changes by age alone (`nextStateChangeMs`); +∞ once SILENT or before it is judged. */
  nextMs: number;
  /** Its place in the view's crossing heap; -1 when not in it. */
  heapAt: number;
}

/** `shown` copied, with each entry of `judged` at its place (`index`) showing its status now; the places are noted (`noteEdits`). */
export function withJudged(shown: readonly MachineStatus[], judged: readonly Entry[], index: ReadonlyMap<string, number>): MachineStatus[] {
  const out = shown.slice();
  const places: number[] = [];
  for (const entry of judged) {
    const at = index.get(entry.status.name)!;
    out[at] = entry.status;
    places.push(at);
  }
  noteEdits(out, shown, places);
  return out;
}

/** Two lists sorted by `order` merged into one, in one pass. */
export function mergeSorted<T>(a: T[], b: readonly T[], order: (x: T, y: T) => number): T[] {
  if (b.length === 0) return a;
  const out: T[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) out.push(order(a[i]!, b[j]!) <= 0 ? a[i++]! : b[j++]!);
  while (i < a.length) out.push(a[i++]!);
  while (j < b.length) out.push(b[j++]!);
  return out;
}

/** Entries in name order. */
export const byEntryName = (a: Entry, b: Entry): number => byName(a.status.name, b.status.name);

// Which places of a list were written when it was made as a copy of another. A composition of a
// steady mesh is the one before with a few machines put in (the view's `withJudged`, the
// publisher's coarsening, a follower's delta put in place): whoever compares the two lists after
// (the delta, the coarsening, the counts, the recent window) asks here and visits those places
// alone, not every machine. At a million machines each such walk was 10–15 ms a composition.

/** Edits are kept only for a list written at no more than this share of its places: past it, a walk of the whole list is as cheap. */
const LIST_EDITS_SHARE_MAX = 0.25;

interface Edits {
  /** Held weakly: a list's edits must not keep every list before it alive. */
  from: WeakRef<readonly unknown[]>;
  places: readonly number[];
}

const editsOf = new WeakMap<readonly unknown[], Edits>();

/**
 * Notes that `list` is `from` copied with `places` written, each with an item of the same key as
 * the one it replaced (a place may hold the very same object again); every other place holds the
 * very object of `from`. Neither list may be changed after. Not noted past LIST_EDITS_SHARE_MAX.
 */
export function noteEdits(list: readonly unknown[], from: readonly unknown[], places: readonly number[]): void {
  if (list.length !== from.length || places.length > list.length * LIST_EDITS_SHARE_MAX) return;
  const sorted = Int32Array.from(places).sort();
  const unique: number[] = [];
  for (const place of sorted) if (unique.at(-1) !== place) unique.push(place);
  editsOf.set(list, { from: new WeakRef(from), places: unique });
}

/** The places (ascending) at which `list` may differ from `from`, when it was noted as made from it; undefined otherwise. */
export function editedPlaces(list: readonly unknown[], from: readonly unknown[]): readonly number[] | undefined {
  const edits = editsOf.get(list);
  return edits && edits.from.deref() === from ? edits.places : undefined;
}

/** The list `list` was noted as made from, with the places written; undefined when none is known (or it is gone). */
export function editsOfList<T>(list: readonly T[]): { from: readonly T[]; places: readonly number[] } | undefined {
  const edits = editsOf.get(list);
  const from = edits?.from.deref() as readonly T[] | undefined;
  return from && edits ? { from, places: edits.places } : undefined;
}

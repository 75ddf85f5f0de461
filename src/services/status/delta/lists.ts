import { Invalid } from '../../../kernel/errors.js';
import { editedPlaces, noteEdits } from '../../../kernel/list-edits.js';

// A keyed list's changes, pure (as the rest of the delta algebra, algebra.ts): found between two
// lists (`diffList`) and applied to the base (`applyListChanges`).

/**
 * The changes to one keyed list of a composition, from a base to the next. Applied to the base's
 * list it gives the next one exactly, items and order (see `applyListChanges`).
 */
export interface ListChanges<T> {
  /** Items whose key the base did not have, in the order of the new list. */
  added: T[];
  /** Where each added item stands in the new list: ascending, one per `added`. */
  addedAt: number[];
  /** Items the base had under the same key with another value: the whole new value. */
  changed: T[];
  /** Keys the base had and the new list does not. */
  removed: string[];
  /** Every key of the new list in order; set only when items kept from the base changed their relative order. */
  order: string[] | null;
}

/**
 * A list's changes as a client receives them over GraphQL: the same, read-only, and `changed`
 * absent from a list of names (`NameChanges` has none: a name is added or removed, never changed).
 */
export interface ListChangesIn<T> {
  readonly added: readonly T[];
  readonly addedAt: readonly number[];
  readonly changed?: readonly T[];
  readonly removed: readonly string[];
  readonly order: readonly string[] | null;
}

/** Whether two JSON values (plain objects, arrays, strings, numbers, booleans, null) are equal by value. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) {
    if (!Object.hasOwn(b, k)) return false;
    if (!sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}

/**
 * The changes turning list `a` into list `b`, items matched by `key` (keys are unique in a list).
 * The same list has none; a list noted as made from `a` by writing a few places (`noteEdits`, a
 * composition after a few machines changed) is compared at those places alone. Otherwise it walks
 * both lists side by side first (`diffInStep`): an incremental composition keeps every
 * machine it did not touch as the very same object in the same order, so at a million machines
 * the walk is a pointer compare per item where maps of every key cost hundreds of ms
 * (docs/BENCHMARKS.md, "A million machines"). Items kept in another relative order fall back to
 * `diffByKeys`; both give the same changes.
 */
export function diffList<T>(a: readonly T[], b: readonly T[], key: (item: T) => string): ListChanges<T> {
  const places = a === b ? [] : editedPlaces(b, a);
  if (places) return diffAtPlaces(a, b, places);
  return diffInStep(a, b, key) ?? diffByKeys(a, b, key);
}

/**
 * `diffList` of `b` made from `a` by writing `places` (`noteEdits`: the same key at each, the very
 * same object everywhere else): what `diffInStep` finds, visiting those places alone.
 */
function diffAtPlaces<T>(a: readonly T[], b: readonly T[], places: readonly number[]): ListChanges<T> {
  const changes: ListChanges<T> = { added: [], addedAt: [], changed: [], removed: [], order: null };
  for (const i of places) if (a[i] !== b[i] && !sameJson(a[i], b[i])) changes.changed.push(b[i] as T);
  return changes;
}

/**
 * `diffList` by walking `a` and `b` together: the same object or the same key at both places is
 * kept (changed when its value differs); otherwise the item of `a` whose key `b` lacks was removed,
 * the item of `b` whose key `a` lacks was added. The sets of keys are built only when some key
 * differs at a place. Undefined when kept items changed their relative order.
 */
function diffInStep<T>(a: readonly T[], b: readonly T[], key: (item: T) => string): ListChanges<T> | undefined {
  const changes: ListChanges<T> = { added: [], addedAt: [], changed: [], removed: [], order: null };
  let keysOfA: Set<string> | undefined;
  let keysOfB: Set<string> | undefined;
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length) {
      const x = a[i] as T;
      const y = b[j] as T;
      if (x === y) {
        i++;
        j++;
        continue;
      }
      const kx = key(x);
      const ky = key(y);
      if (kx === ky) {
        if (!sameJson(x, y)) changes.changed.push(y);
        i++;
        j++;
        continue;
      }
      keysOfB ??= new Set(b.map(key));
      if (!keysOfB.has(kx)) {
        changes.removed.push(kx);
        i++;
        continue;
      }
      keysOfA ??= new Set(a.map(key));
      if (!keysOfA.has(ky)) {
        changes.added.push(y);
        changes.addedAt.push(j);
        j++;
        continue;
      }
      return undefined;
    }
    if (i < a.length) {
      const kx = key(a[i] as T);
      keysOfB ??= new Set(b.map(key));
      if (keysOfB.has(kx)) return undefined;
      changes.removed.push(kx);
      i++;
    } else {
      const y = b[j] as T;
      keysOfA ??= new Set(a.map(key));
      if (keysOfA.has(key(y))) return undefined;
      changes.added.push(y);
      changes.addedAt.push(j);
      j++;
    }
  }
  return changes;
}

/** `diffList` by maps of every key: any order. */
function diffByKeys<T>(a: readonly T[], b: readonly T[], key: (item: T) => string): ListChanges<T> {
  const before = new Map<string, T>();
  for (const item of a) before.set(key(item), item);
  const changes: ListChanges<T> = { added: [], addedAt: [], changed: [], removed: [], order: null };
  const after = new Set<string>();
  const keptInNewOrder: string[] = [];
  for (let i = 0; i < b.length; i++) {
    const item = b[i];
    const k = key(item);
    after.add(k);
    if (!before.has(k)) {
      changes.added.push(item);
      changes.addedAt.push(i);
      continue;
    }
    keptInNewOrder.push(k);
    if (!sameJson(before.get(k), item)) changes.changed.push(item);
  }
  let kept = 0;
  let reordered = false;
  for (const item of a) {
    const k = key(item);
    if (!after.has(k)) changes.removed.push(k);
    else if (keptInNewOrder[kept++] !== k) reordered = true;
  }
  if (reordered) changes.order = b.map(key);
  return changes;
}

/**
 * List `a` with `changes` applied: removals, then changed values in place, then additions at their
 * places (or `order`). `changed` may be absent, as it is from a list of names on the wire. One pass
 * over `a` (additions merged in at their places, not spliced one by one into a list of a million);
 * keys are read only when something is removed or changed.
 */
export function applyListChanges<T>(a: readonly T[], changes: ListChangesIn<T>, key: (item: T) => string): T[] {
  if (changes.added.length !== changes.addedAt.length) throw new Invalid('a delta list has as many places as added items');
  if (!changes.order && !changes.removed.length && !changes.added.length && changes.changed?.length) {
    const patched = changedInPlace(a, changes.changed, key);
    if (patched) return patched;
  }
  const removed = changes.removed.length ? new Set(changes.removed) : undefined;
  const changed = changes.changed?.length ? new Map<string, T>() : undefined;
  for (const item of changes.changed ?? []) changed?.set(key(item), item);
  const list: T[] = [];
  if (changes.order) {
    for (const item of a) {
      const k = key(item);
      if (!removed?.has(k)) list.push(changed?.get(k) ?? item);
    }
    const byKey = new Map<string, T>();
    for (const item of list) byKey.set(key(item), item);
    for (const item of changes.added) byKey.set(key(item), item);
    return changes.order.map((k) => {
      const item = byKey.get(k);
      if (item === undefined) throw new Invalid(`a delta orders ${JSON.stringify(k)}, which it neither keeps nor adds`);
      return item;
    });
  }
  const { added, addedAt } = changes;
  let next = 0;
  for (const item of a) {
    let kept = item;
    if (removed || changed) {
      const k = key(item);
      if (removed?.has(k)) continue;
      kept = changed?.get(k) ?? item;
    }
    while (next < added.length && (addedAt[next] as number) <= list.length) list.push(added[next++] as T);
    list.push(kept);
  }
  while (next < added.length) list.push(added[next++] as T);
  return list;
}

/**
 * `a` copied with each of `changed` put in the place of the item of its key, found by binary
 * search in code-unit order (the order a composition keeps its lists in); undefined when a key is
 * not found so, and the caller reads every key. A delta of a few machines' states applied to
 * 100,000 machines read every key into a map lookup: 9% of a replica following four a second.
 */
function changedInPlace<T>(a: readonly T[], changed: readonly T[], key: (item: T) => string): T[] | undefined {
  const list = a.slice();
  const places: number[] = [];
  for (const item of changed) {
    const k = key(item);
    let lo = 0;
    let hi = list.length - 1;
    let at = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const midKey = key(list[mid] as T);
      if (midKey < k) lo = mid + 1;
      else if (midKey > k) hi = mid - 1;
      else {
        at = mid;
        break;
      }
    }
    if (at < 0) return undefined;
    list[at] = item;
    places.push(at);
  }
  noteEdits(list, a, places);
  return list;
}

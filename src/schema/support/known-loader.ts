import DataLoader from 'dataloader';
import { type FieldNode, Kind } from 'graphql';

/**
 * A per-request DataLoader that also keeps what it answered in a map, so that a resolver reached
 * after its batch gets the value itself instead of a promise: at thousands of items a level, a
 * promise and DataLoader's bookkeeping per item were most of the gateway's execution time
 * (docs/BENCHMARKS.md, issue 13). The fields the query selects on its values (`asks`) reach the
 * batch, which reads the next level for all of them at once when they are asked for.
 */
export class KnownLoader<V> {
  readonly #known = new Map<string, V>();
  readonly #asked = new Set<string>();
  readonly #batch: (keys: readonly string[], asked: ReadonlySet<string>) => Promise<V[]>;
  readonly #loader: DataLoader<string, V>;

  constructor(batch: (keys: readonly string[], asked: ReadonlySet<string>) => Promise<V[]>) {
    this.#batch = batch;
    this.#loader = new DataLoader(async (keys) => this.#remember(keys, await batch(keys, this.#asked)));
  }

  #remember(keys: readonly string[], values: V[]): V[] {
    for (const [i, key] of keys.entries()) this.#known.set(key, values[i]!);
    return values;
  }

  /** The value of `key`: itself when already read in this request, else a promise of it (batched). */
  get(key: string): V | Promise<V> {
    return this.#known.has(key) ? (this.#known.get(key) as V) : this.#loader.load(key);
  }

  prime(key: string, value: V): void {
    this.#known.set(key, value);
  }

  /**
   * Notes the fields selected directly under these field nodes, whose values this loader answers,
   * and one level below them as `field/sub` (`field/*` for a fragment there), so that the batch
   * reads the next level's columns only as far as they are asked.
   */
  asks(fieldNodes: readonly FieldNode[]): this {
    for (const node of fieldNodes) {
      for (const s of node.selectionSet?.selections ?? []) {
        if (s.kind !== Kind.FIELD) continue;
        this.#asked.add(s.name.value);
        for (const t of s.selectionSet?.selections ?? []) this.#asked.add(`${s.name.value}/${t.kind === Kind.FIELD ? t.name.value : '*'}`);
      }
    }
    return this;
  }

  /**
   * Reads every key not yet read in one call of the batch, without a promise per key. A failed
   * read is left to the resolvers that `get` those keys: they read them again and meet the error
   * at their own place in the answer, as without the prefetch.
   */
  async prefetch(keys: Iterable<string>): Promise<void> {
    const missing = [...new Set(keys)].filter((key) => !this.#known.has(key));
    if (!missing.length) return;
    try {
      this.#remember(missing, await this.#batch(missing, this.#asked));
    } catch {
      // left to the resolvers, as said above
    }
  }
}

/**
 * The nodes of `field` selected directly under these field nodes (fragments are not looked into:
 * a miss only means the next level is read when first reached, as without look-ahead).
 */
export const selected = (fieldNodes: readonly FieldNode[], field: string): FieldNode[] =>
  fieldNodes.flatMap((node) => (node.selectionSet?.selections ?? []).filter((s): s is FieldNode => s.kind === Kind.FIELD && s.name.value === field));

/** Whether these field nodes select only fields among `fields` (no fragment): a brief read answers them. */
export const selectsOnly = (fieldNodes: readonly FieldNode[], fields: ReadonlySet<string>): boolean =>
  fieldNodes.every((node) => (node.selectionSet?.selections ?? []).every((s) => s.kind === Kind.FIELD && fields.has(s.name.value)));

/** Whether a loader's asked set (`asks`) selects under `field` only fields among `fields`. */
export const asksOnly = (asked: ReadonlySet<string>, field: string, fields: ReadonlySet<string>): boolean =>
  [...asked].every((a) => !a.startsWith(`${field}/`) || fields.has(a.slice(field.length + 1)));

/** A value read by a loader, or the error of one that should exist and does not. */
export function present<V>(value: V | undefined | Promise<V | undefined>, gone: () => string): V | Promise<V> {
  if (value instanceof Promise) return value.then((v) => present(v, gone));
  if (value === undefined) throw new Error(gone());
  return value;
}

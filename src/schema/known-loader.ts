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
  readonly #loader: DataLoader<string, V>;

  constructor(batch: (keys: readonly string[], asked: ReadonlySet<string>) => Promise<V[]>) {
    this.#loader = new DataLoader(async (keys) => {
      const values = await batch(keys, this.#asked);
      for (const [i, key] of keys.entries()) this.#known.set(key, values[i]!);
      return values;
    });
  }

  /** The value of `key`: itself when already read in this request, else a promise of it (batched). */
  get(key: string): V | Promise<V> {
    return this.#known.has(key) ? (this.#known.get(key) as V) : this.#loader.load(key);
  }

  load(key: string): Promise<V> {
    return this.#loader.load(key);
  }

  prime(key: string, value: V): void {
    this.#known.set(key, value);
    this.#loader.prime(key, value);
  }

  /** Notes the fields selected directly under these field nodes, whose values this loader answers. */
  asks(fieldNodes: readonly FieldNode[]): this {
    for (const node of fieldNodes) for (const s of node.selectionSet?.selections ?? []) if (s.kind === Kind.FIELD) this.#asked.add(s.name.value);
    return this;
  }

  /** Reads, in one batch, every key not yet read; a failed batch is left to the resolvers that `get` it. */
  async prefetch(keys: Iterable<string>): Promise<void> {
    const missing = [...new Set(keys)].filter((key) => !this.#known.has(key));
    if (missing.length) await this.#loader.loadMany(missing);
  }
}

/**
 * The nodes of `field` selected directly under these field nodes (fragments are not looked into:
 * a miss only means the next level is read when first reached, as without look-ahead).
 */
export const selected = (fieldNodes: readonly FieldNode[], field: string): FieldNode[] =>
  fieldNodes.flatMap((node) => (node.selectionSet?.selections ?? []).filter((s): s is FieldNode => s.kind === Kind.FIELD && s.name.value === field));

/** A value read by a loader, or the error of one that should exist and does not. */
export function present<V>(value: V | undefined | Promise<V | undefined>, gone: () => string): V | Promise<V> {
  if (value instanceof Promise) return value.then((v) => present(v, gone));
  if (value === undefined) throw new Error(gone());
  return value;
}

/** What the crossing heap files: the instant an item next changes, and its place in the heap (-1: not in it). */
export interface Filed {
  nextMs: number;
  heapAt: number;
}

/**
 * Machines of the composer's view by the heard instant each next changes state at (a binary
 * min-heap that keeps each item's place, so one moved or removed costs log n): a composition at a
 * million machines judges again only those the watermark passed (docs/status.md, "Composing").
 */
export class CrossingHeap<T extends Filed> {
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  /** Puts `item` in, or moves it to its place after its `nextMs` changed. */
  file(item: T): void {
    if (item.heapAt < 0) {
      item.heapAt = this.items.length;
      this.items.push(item);
      this.up(item.heapAt);
      return;
    }
    this.up(item.heapAt);
    this.down(item.heapAt);
  }

  /** Takes `item` out; one not in the heap is left as it is. */
  remove(item: T): void {
    const at = item.heapAt;
    if (at < 0) return;
    const last = this.items.pop() as T;
    item.heapAt = -1;
    if (last === item) return;
    this.items[at] = last;
    last.heapAt = at;
    this.up(at);
    this.down(last.heapAt);
  }

  /** The earliest `nextMs`; undefined when empty. */
  earliest(): number | undefined {
    return this.items[0]?.nextMs;
  }

  /** Every item whose `nextMs` is before `bound`, in no order: a walk of the heap's top, its cost the items found. */
  below(bound: number): T[] {
    const found: T[] = [];
    const places = [0];
    while (places.length) {
      const at = places.pop() as number;
      const item = this.items[at];
      if (!item || item.nextMs >= bound) continue;
      found.push(item);
      places.push(2 * at + 1, 2 * at + 2);
    }
    return found;
  }

  private up(at: number): void {
    const item = this.items[at] as T;
    while (at > 0) {
      const parentAt = (at - 1) >> 1;
      const parent = this.items[parentAt] as T;
      if (parent.nextMs <= item.nextMs) break;
      this.items[at] = parent;
      parent.heapAt = at;
      at = parentAt;
    }
    this.items[at] = item;
    item.heapAt = at;
  }

  private down(at: number): void {
    const item = this.items[at] as T;
    const n = this.items.length;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && (this.items[right] as T).nextMs < (this.items[left] as T).nextMs ? right : left;
      const next = this.items[child] as T;
      if (next.nextMs >= item.nextMs) break;
      this.items[at] = next;
      next.heapAt = at;
      at = child;
    }
    this.items[at] = item;
    item.heapAt = at;
  }
}

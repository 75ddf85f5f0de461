/**
 * Work over a whole mesh (a full composition, a takeover's, at a million machines) gives the event
 * loop a turn at least this often: the serving lease is refreshed on that loop every second and
 * trusted for three (src/services/replicas/leases.ts), and NATS replies and HTTP requests wait
 * behind it too. A composition that held the loop for 5 s lost the lease it composed under
 * (docs/BENCHMARKS.md, "A composition that gives the loop its turns").
 */
export const PACE_SLICE_MS = 50;
/** The clock is read once every this many items: a turn is due at most this late. */
const PACE_CHECK_EVERY = 1024;

/** Paces one long piece of work: `due()` in its loops, `turn()` when it says so. */
export class Pacer {
  private turnedAt = performance.now();
  private count = 0;

  /** Whether a slice of work is up (the clock read every PACE_CHECK_EVERY calls): then await `turn()`. */
  due(): boolean {
    if (++this.count % PACE_CHECK_EVERY !== 0) return false;
    return performance.now() - this.turnedAt >= PACE_SLICE_MS;
  }

  /** Lets timers, sockets and other work run, then starts a new slice. */
  async turn(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.turnedAt = performance.now();
  }
}

/** `items` mapped as `Array.map` does, turning the loop whenever `pacer` says a slice is up. */
export async function pacedMap<T, U>(items: readonly T[], pacer: Pacer, map: (item: T, index: number) => U): Promise<U[]> {
  const out = new Array<U>(items.length);
  for (let i = 0; i < items.length; i++) {
    out[i] = map(items[i]!, i);
    if (pacer.due()) await pacer.turn();
  }
  return out;
}

/** Visits each item of `items` in order, turning the loop whenever `pacer` says a slice is up. */
export async function pacedEach<T>(items: Iterable<T>, pacer: Pacer, visit: (item: T) => void): Promise<void> {
  for (const item of items) {
    visit(item);
    if (pacer.due()) await pacer.turn();
  }
}

/** A caller may spend up to this many seconds' worth of operations at once, then its rate. */
const BURST_SECONDS = 2;

/** Past this many callers' buckets, those full again (idle for BURST_SECONDS) are dropped: dropping one loses nothing. */
const BUCKETS_SWEPT_PAST = 10_000;

/**
 * Operations per second per caller, as token buckets: one bucket per caller name. Names come from
 * the tokens file (or `local`) and from verified JWTs' `sub`, as many as the identity provider has
 * users: idle buckets are swept past BUCKETS_SWEPT_PAST, so the map holds about the callers active
 * in the last BURST_SECONDS.
 */
export class OperationRate {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    readonly perSecond: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes one operation for `caller`: 0 when allowed, else the whole seconds to wait before the next. */
  take(caller: string): number {
    const burst = this.perSecond * BURST_SECONDS;
    const now = this.now();
    if (this.buckets.size >= BUCKETS_SWEPT_PAST && !this.buckets.has(caller)) {
      for (const [name, idle] of this.buckets) if (now - idle.at >= BURST_SECONDS * 1000) this.buckets.delete(name);
    }
    const bucket = this.buckets.get(caller) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond);
    bucket.at = now;
    this.buckets.set(caller, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.perSecond));
  }

  /** Whether `take` would refuse `caller` now; takes nothing. */
  wouldRefuse(caller: string): boolean {
    const bucket = this.buckets.get(caller);
    if (!bucket) return this.perSecond * BURST_SECONDS < 1;
    return Math.min(this.perSecond * BURST_SECONDS, bucket.tokens + ((this.now() - bucket.at) / 1000) * this.perSecond) < 1;
  }
}

import { DeliverPolicy, type JetStreamClient } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { Invalid } from '../../../kernel/errors.js';
import { editsOfList } from '../../../kernel/list-edits.js';
import type { Composition, StatusFeed } from '../composition.js';
import { COUNTS_HEADER } from '../replicating/wire.js';

/**
 * The counts over time are kept as changes, at most two points per this long (the first change in
 * it and the latest): what a point between those two can be off by.
 */
export const STATUS_COUNTS_GRAIN_MS = 10_000;
/** `statusCounts` answers at most this many points (a day at a minute's step is 1,441): its cost is bounded by them, not the window. */
export const STATUS_COUNTS_POINTS_MAX = 2000;
/** Without `stepSeconds`, the window is cut into about this many steps. */
export const STATUS_COUNTS_POINTS_DEFAULT = 240;
/** `since` defaults to this long before `until`: the day the stream holds by default. */
export const STATUS_COUNTS_DEFAULT_SPAN_MS = 24 * 3600 * 1000;

export interface StateCounts {
  up: number;
  late: number;
  silent: number;
}

/** One point of `statusCounts`: the machines UP, LATE and SILENT in the composition in force at `at`. */
export interface StatusCount extends StateCounts {
  at: string;
}

/** The counts of each list of machines counted, while the list lives. */
const countedStates = new WeakMap<readonly { state: string }[], StateCounts>();

function count(counts: { up: number; late: number; silent: number }, state: string, by: number): void {
  if (state === 'UP') counts.up += by;
  else if (state === 'LATE') counts.late += by;
  else if (state === 'SILENT') counts.silent += by;
}

/** The counts of a list made from a counted one by writing a few places (`noteEdits`): the counts before, moved by those places alone. */
function countedFromEdits(machines: readonly { state: string }[]): { up: number; late: number; silent: number } | undefined {
  const edits = editsOfList(machines);
  const before = edits && countedStates.get(edits.from);
  if (!edits || !before) return undefined;
  const counts = { ...before };
  for (const i of edits.places) {
    count(counts, edits.from[i]!.state, -1);
    count(counts, machines[i]!.state, 1);
  }
  return counts;
}

/**
 * How many of these machines each state holds, counted once a list: every replica counts each
 * composition it hears for the series and for /metrics, and the serving one for the stream's
 * header; at 100,000 machines and 4 compositions a second, five passes were a tenth of a replica's CPU.
 */
export function countStates(machines: readonly { state: string }[]): StateCounts {
  const known = countedStates.get(machines);
  if (known) return known;
  let counts = countedFromEdits(machines);
  if (!counts) {
    counts = { up: 0, late: 0, silent: 0 };
    for (const m of machines) count(counts, m.state, 1);
  }
  Object.freeze(counts);
  countedStates.set(machines, counts);
  return counts;
}

const parseCounts = (value: string | undefined): StateCounts | undefined => {
  const m = value ? /^(\d+) (\d+) (\d+)$/.exec(value) : null;
  return m ? { up: Number(m[1]), late: Number(m[2]), silent: Number(m[3]) } : undefined;
};

type Point = StateCounts & { t: number };

const grainOf = (t: number) => Math.floor(t / STATUS_COUNTS_GRAIN_MS);
const sameCounts = (a: StateCounts, b: StateCounts) => a.up === b.up && a.late === b.late && a.silent === b.silent;

/**
 * Adds the counts in force from `t` to points kept oldest first: nothing when they are the last
 * point's; in place of the last when the two before are both in t's grain. False when older than the last.
 */
function appendPoint(points: Point[], point: Point): boolean {
  const last = points.at(-1);
  if (last && point.t < last.t) return false;
  if (last && sameCounts(last, point)) return true;
  const before = points.at(-2);
  if (last && before && grainOf(last.t) === grainOf(point.t) && grainOf(before.t) === grainOf(point.t)) points[points.length - 1] = point;
  else points.push(point);
  return true;
}

/**
 * The counts of the compositions over the kept history, as changes, oldest first (at most two per
 * STATUS_COUNTS_GRAIN_MS); points older than `keepMs` leave. At most 2 × keepMs / grain + 2
 * points, however many compositions.
 */
export class StatusCountSeries {
  private points: Point[] = [];

  constructor(private readonly keepMs: number) {}

  /** The counts of the composition in force from instant `t` (ms). */
  record(t: number, counts: StateCounts): void {
    // One older than what is held is a backfill's, merged by `prepend`.
    if (appendPoint(this.points, { t, ...counts })) this.trim(t);
  }

  /** Points read back from before this replica started, older than any recorded here. */
  prepend(older: Point[]): void {
    const first = this.points[0]?.t ?? Number.POSITIVE_INFINITY;
    this.points = [...older.filter((p) => p.t < first), ...this.points];
    this.trim(this.points.at(-1)?.t ?? Date.now());
  }

  get size(): number {
    return this.points.length;
  }

  private trim(now: number): void {
    const oldest = now - this.keepMs;
    let drop = 0;
    while (drop < this.points.length - 1 && this.points[drop]!.t < oldest) drop++;
    if (drop) this.points.splice(0, drop);
  }

  /**
   * The counts at `until`, `until - step`, … back to `since` (default: now, and a day before it or
   * the first point kept, whichever is later), oldest first:
   * each point the composition in force then (to within the grain), none before the first kept.
   * Invalid for a window backwards, a step under 1 s or more than STATUS_COUNTS_POINTS_MAX points.
   * Its cost is the points answered plus one binary search.
   */
  query(query: { since?: Date | null; until?: Date | null; stepSeconds?: number | null }, now = new Date()): StatusCount[] {
    const until = Math.min((query.until ?? now).getTime(), now.getTime());
    // Without `since`: the history kept, up to a day (not instants before the first point, which would have none).
    const since = query.since ? query.since.getTime() : Math.max(until - STATUS_COUNTS_DEFAULT_SPAN_MS, Math.min(this.points[0]?.t ?? until, until));
    if (Number.isNaN(since) || Number.isNaN(until)) throw new Invalid('since and until are instants', 'since');
    if (since > until) throw new Invalid('since is after until (or after now)', 'since');
    const span = until - since;
    let stepMs: number;
    if (query.stepSeconds == null) stepMs = Math.max(1000, Math.ceil(span / STATUS_COUNTS_POINTS_DEFAULT / 1000) * 1000);
    else {
      if (!Number.isInteger(query.stepSeconds) || query.stepSeconds < 1)
        throw new Invalid('stepSeconds must be a whole number of seconds, 1 or more', 'stepSeconds');
      stepMs = query.stepSeconds * 1000;
    }
    const count = Math.floor(span / stepMs) + 1;
    if (count > STATUS_COUNTS_POINTS_MAX) {
      const least = Math.ceil(span / (STATUS_COUNTS_POINTS_MAX - 1) / 1000);
      throw new Invalid(`that is ${count} points; at most ${STATUS_COUNTS_POINTS_MAX}: a stepSeconds of ${least} or more, or a shorter window`, 'stepSeconds');
    }
    const points = this.points;
    // The instants end at `until`, so the last point is the composition in force then (now, by default).
    const first = until - (count - 1) * stepMs;
    // The last point at or before the first instant, by binary search; then walk forward with the instants.
    let lo = 0;
    let hi = points.length - 1;
    let i = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (points[mid]!.t <= first) {
        i = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    const out: StatusCount[] = [];
    for (let k = 0; k < count; k++) {
      const at = first + k * stepMs;
      while (i + 1 < points.length && points[i + 1]!.t <= at) i++;
      if (i < 0) continue;
      const p = points[i]!;
      out.push({ at: new Date(at).toISOString(), up: p.up, late: p.late, silent: p.silent });
    }
    return out;
  }
}

export interface StatusCountsLink {
  js: JetStreamClient;
  stream: string;
}

export interface RunningStatusCounts {
  series: StatusCountSeries;
  /** Settles once the history from before this replica started is read back (or could not be). */
  backfilled: Promise<void>;
  stop(): void;
}

/**
 * Keeps this replica's counts over time: each composition it hears (the feed), and, read once at
 * start from the status stream's headers only (COUNTS_HEADER, never the bodies), those from before
 * it started. Compositions stored before the header existed have no counts and give no points.
 */
export function startStatusCounts(feed: StatusFeed, link: StatusCountsLink | undefined, keepMs: number, logger?: Logger): RunningStatusCounts {
  const series = new StatusCountSeries(keepMs);
  const hear = (c: Composition) => series.record(Date.parse(c.composedAt), countStates(c.machines));
  const now = feed.current();
  if (now) hear(now);
  const unsubscribe = feed.subscribe(hear);
  let stopped = false;
  const backfilled = link
    ? readBack(link, () => stopped)
        .then((points) => series.prepend(points))
        .catch((err) => logger?.warn({ err: String(err) }, 'the status counts from before this replica started could not be read'))
    : Promise.resolve();
  return {
    series,
    backfilled,
    stop() {
      stopped = true;
      unsubscribe();
    },
  };
}

/** Every message's counts header in the stream as it is now, as changes (`appendPoint`). */
async function readBack(link: StatusCountsLink, stopped: () => boolean): Promise<Point[]> {
  const consumer = await link.js.consumers.get(link.stream, { deliver_policy: DeliverPolicy.All, headers_only: true });
  const points: Point[] = [];
  try {
    for (;;) {
      if (stopped()) break;
      const batch = await consumer.fetch({ max_messages: 10_000, expires: 2_000 });
      let got = 0;
      let pending = 1;
      for await (const m of batch) {
        got++;
        pending = m.info.pending;
        const counts = parseCounts(m.headers?.get(COUNTS_HEADER));
        if (!counts) continue;
        appendPoint(points, { t: m.time.getTime(), ...counts });
      }
      if (!got || pending === 0) break;
    }
  } finally {
    await consumer.delete().catch(() => undefined);
  }
  return points;
}

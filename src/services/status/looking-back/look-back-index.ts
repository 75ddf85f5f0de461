import type { Logger } from 'pino';
import type { Composition } from '../composition.js';
import type { StatusDelta } from '../delta/delta.js';
import type { StatusChangeFeed } from '../live/subscription.js';
import type { StatusStreamLink } from '../replicating/stream-follower.js';
import { framingOf, type StreamEntry, type StreamMessage } from '../replicating/wire.js';
import { MachineChanges } from './machine-changes.js';
import { RecentWindow } from './recent-window.js';
import { followDirectory, StreamDirectory } from './stream-directory.js';
import { Timeline } from './timeline.js';

/** How often the index drops what the status stream dropped (its MESH_STATUS_HISTORY_H, its bytes). */
export const LOOK_BACK_TRIM_EVERY_MS = 60_000;
/** A look back before what the index holds waits this long for the backfill before reading the stream itself. */
export const LOOK_BACK_WAIT_MS = 3_000;

/** What a replica keeps to look back without reading the stream: docs/status.md, "Looking back". */
export interface LookBackIndex {
  changes: MachineChanges;
  timeline: Timeline;
  directory: StreamDirectory;
  /** The last minutes of compositions as heard, checkpoints and steps: `statusAt` in them reads no stream. */
  recent?: RecentWindow;
  /** Whether the stream's history from before this replica started is read into it. */
  backfilled(): boolean;
  /** Whether it holds what the stream holds from instant `t` (ms) on; waits LOOK_BACK_WAIT_MS at most for the backfill. */
  covers(t: number): Promise<boolean>;
}

/** What the index reads the stream through and is handed to: the replica's `StatusHistory`. */
export interface IndexedHistory {
  link: Pick<StatusStreamLink, 'js' | 'jsm' | 'stream'>;
  bounds(): Promise<{ first: number; last: number }>;
  entries(from: number, to: number, skip?: (msg: StreamMessage) => boolean): AsyncGenerator<StreamEntry>;
  useIndex(index: LookBackIndex): void;
}

export interface RunningLookBackIndex extends LookBackIndex {
  /** Settles once the backfill is done (or failed: logged, and the stream is read as before). */
  backfill: Promise<void>;
  stop(): void;
}

/** Records composition `c` whole: every machine in it, and every one indexed as present that is not. */
function recordWhole(changes: MachineChanges, c: Composition, at: number): void {
  for (const m of c.machines) changes.record(m.name, c.seq, at, m);
  // Every machine of it is shown now: when no more are, none left it (the common case, with no set of a million names).
  if (changes.shown === c.machines.length) return;
  const present = new Set(c.machines.map((m) => m.name));
  for (const [name, shown] of changes.names()) if (shown && !present.has(name)) changes.record(name, c.seq, at, undefined);
}

/** Records composition `c`: from its delta when it follows the last recorded, else whole. */
function recordComposition(changes: MachineChanges, timeline: Timeline, c: Composition, delta: StatusDelta | undefined): void {
  const last = timeline.last();
  if (last && c.seq <= last.seq) return;
  const at = Date.parse(c.composedAt);
  if (delta && last && delta.baseSeq === last.seq && delta.seq === c.seq) {
    for (const m of delta.machines.added) changes.record(m.name, c.seq, at, m);
    for (const m of delta.machines.changed) changes.record(m.name, c.seq, at, m);
    for (const name of delta.machines.removed) changes.record(name, c.seq, at, undefined);
  } else recordWhole(changes, c, at);
  timeline.push(c.seq, at);
}

/**
 * The history the stream holds before composition `before` (or all of it), read once: every delta
 * parsed, a snapshot only after a gap (one that merely repeats the deltas is not even gunzipped).
 */
async function readBack(
  history: IndexedHistory,
  before: () => number | undefined,
  stopped: () => boolean,
): Promise<{ changes: MachineChanges; timeline: Timeline }> {
  const changes = new MachineChanges();
  const timeline = new Timeline();
  const { first, last } = await history.bounds();
  // Until the first snapshot, and after a gap until the next, deltas have nothing to apply to.
  let broken = true;
  const reached = () => timeline.last()?.seq ?? Number.NEGATIVE_INFINITY;
  const skip = (msg: StreamMessage) => {
    const framing = framingOf(msg);
    if (!framing) return true;
    return framing.seq <= reached() || (framing.kind === 'delta' && broken);
  };
  for await (const entry of history.entries(first, last, skip)) {
    const stop = before();
    if (stopped() || (stop !== undefined && entry.seq >= stop)) break;
    if (entry.seq <= reached()) continue;
    if (entry.kind === 'snapshot') {
      recordComposition(changes, timeline, entry.composition, undefined);
      broken = false;
    } else if (broken || entry.delta.baseSeq !== reached()) broken = true;
    else {
      const d = entry.delta;
      recordComposition(changes, timeline, { seq: d.seq, composedAt: d.composedAt } as Composition, d);
    }
  }
  return { changes, timeline };
}

/**
 * Keeps this replica's look-back index: each composition the feed hands it (a delta says which
 * machines changed; one without, whole) and its last minutes of compositions (`RecentWindow`,
 * bounded by `window`, LOOK_BACK_WINDOW_BYTES_MAX by default), the stream's history from before it
 * started read back once in the background, the stream's directory followed from its headers, and
 * what the stream drops trimmed every LOOK_BACK_TRIM_EVERY_MS. Attached to `history`, which
 * answers from it.
 */
export function startLookBackIndex(
  feed: StatusChangeFeed,
  history: IndexedHistory,
  logger: Logger,
  options: { window?: ConstructorParameters<typeof RecentWindow>[0] } = {},
): RunningLookBackIndex {
  const changes = new MachineChanges();
  const timeline = new Timeline();
  const directory = new StreamDirectory();
  const recent = new RecentWindow(options.window);
  const hear = (c: Composition, delta?: StatusDelta) => {
    recordComposition(changes, timeline, c, delta);
    recent.hear(c, delta);
  };
  const now = feed.current();
  if (now) hear(now);
  const unsubscribe = feed.subscribe(hear);
  const link = history.link;
  const following = followDirectory(link, directory, logger);
  let stopped = false;
  let backfilled: 'reading' | 'done' | 'failed' = 'reading';
  const backfill = readBack(
    history,
    () => timeline.first()?.seq,
    () => stopped,
  )
    .then((older) => {
      const first = timeline.first();
      changes.prepend(older.changes, first?.seq ?? Number.POSITIVE_INFINITY, first?.at ?? Number.NaN);
      // Compositions heard while reading back, when none was held at the start, are after it.
      timeline.prepend(older.timeline);
      backfilled = stopped ? 'failed' : 'done';
      logger.info({ machines: changes.machines, compositions: timeline.size }, 'the status history is indexed');
    })
    .catch((err) => {
      backfilled = 'failed';
      logger.warn({ err: String(err) }, 'the status history could not be indexed: looking back before this replica started reads the stream');
    });
  const trim = async () => {
    const { first } = await history.bounds();
    directory.trim(first);
    const whole = directory.firstWhole(first);
    if (whole === undefined || backfilled !== 'done') return;
    timeline.trimBefore(whole);
    const from = timeline.first();
    if (from) changes.trim(from.at);
  };
  const trimming = setInterval(
    () => void trim().catch((err) => logger.warn({ err: String(err) }, 'trimming the look-back index failed')),
    LOOK_BACK_TRIM_EVERY_MS,
  );
  trimming.unref();
  const index: RunningLookBackIndex = {
    changes,
    timeline,
    directory,
    recent,
    backfill,
    backfilled: () => backfilled === 'done',
    async covers(t) {
      const first = timeline.first();
      if (backfilled === 'done' || (first && t >= first.at)) return true;
      if (backfilled === 'reading') await Promise.race([backfill, new Promise((resolve) => setTimeout(resolve, LOOK_BACK_WAIT_MS).unref())]);
      return index.backfilled();
    },
    stop() {
      stopped = true;
      clearInterval(trimming);
      unsubscribe();
      following.stop();
    },
  };
  history.useIndex(index);
  return index;
}

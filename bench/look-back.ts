import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import type { Composition, MachineStatus } from '../src/services/status/composition.js';
import type { StatusDelta } from '../src/services/status/delta/delta.js';
import { StatusHistory } from '../src/services/status/looking-back/history.js';
import { type RunningLookBackIndex, startLookBackIndex } from '../src/services/status/looking-back/look-back-index.js';
import { MachineChanges } from '../src/services/status/looking-back/machine-changes.js';
import { machineHistory } from '../src/services/status/looking-back/machine-history.js';
import {
  LOOK_BACK_CHECKPOINT_EVERY_MS,
  LOOK_BACK_WINDOW_BYTES_MAX,
  LOOK_BACK_WINDOW_COMPOSITIONS_MAX,
  RecentWindow,
} from '../src/services/status/looking-back/recent-window.js';
import { StreamDirectory } from '../src/services/status/looking-back/stream-directory.js';
import { Timeline } from '../src/services/status/looking-back/timeline.js';
import { aComposition } from '../test/fixtures/compositions.js';
import { aStatusStream } from '../test/fixtures/status-stream.js';

// Looking back at scale (issue 37): the look-back index's memory and `machineHistory`'s latency at
// 100,000 and 1,000,000 machines over a synthetic day (no agents, no store), and `statusAt`'s from
// a status stream of a snapshot and a minute of beats: from the replica's window in memory, from
// the stream, and the window's heap. `npm run bench -- look-back`; BENCH_LOOK_BACK_SIZES (default
// 100000,1000000) and BENCH_LOOK_BACK_STATUS_AT (default 10000,100000; 1000000 takes minutes to
// publish) choose the sizes (empty: that part is skipped); BENCH_LOOK_BACK_WINDOW_MB the window's
// bound (LOOK_BACK_WINDOW_BYTES_MAX, 256, by default). Each size runs in a child with --expose-gc.

/** A day of compositions at 4 a second (COMPOSE_MIN_GAP_MS). */
const DAY_COMPOSITIONS = 4 * 86_400;
/** Changes of state, site or modules a machine makes in a day, on average (a bad day's worth: LATE, SILENT, back UP). */
const CHANGES_PER_MACHINE = 3;
/** Machines flapping every composition for the whole day, each held to MACHINE_CHANGES_KEPT_MAX. */
const FLAPPING = 20;
const QUERIES = 2_000;
/** A minute of deltas after the snapshot: the most `statusAt` applies (SNAPSHOT_EVERY_MS at 4 a second). */
const DELTAS = 240;
const STATUS_AT_RUNS = 5;

const sizes = (variable: string, fallback: string) => (process.env[variable] ?? fallback).split(',').filter(Boolean).map(Number);
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const name = (i: number) => `machine-${String(i).padStart(7, '0')}`;
const STATES = ['UP', 'LATE', 'SILENT'] as const;
const machine = (i: number, state: (typeof STATES)[number], at: number): MachineStatus => ({
  name: name(i),
  site: `site-${i % 40}`,
  state,
  lastHeardAt: new Date(at).toISOString(),
  modules: i % 3 ? ['agent'] : ['agent', 'broker'],
  holdings: [],
});

/** In a child with --expose-gc: the index over a synthetic day at `machines`, its heap, and machineHistory's latency. */
async function indexRole(machines: number): Promise<void> {
  const heap = () => {
    global.gc?.();
    return process.memoryUsage().heapUsed;
  };
  const before = heap();
  const changes = new MachineChanges();
  const timeline = new Timeline();
  const t0 = Date.now() - 86_400_000;
  const built = performance.now();
  for (let i = 0; i < machines; i++) changes.record(name(i), 1, t0, machine(i, 'UP', t0));
  timeline.push(1, t0);
  const perComposition = (machines * CHANGES_PER_MACHINE) / DAY_COMPOSITIONS;
  const state = new Uint8Array(machines);
  let owed = 0;
  let next = 12_345;
  for (let seq = 2; seq <= DAY_COMPOSITIONS; seq++) {
    const at = t0 + seq * 250;
    timeline.push(seq, at);
    for (owed += perComposition; owed >= 1; owed--) {
      next = (next * 1_103_515_245 + 12_345) % 2 ** 31;
      const i = next % machines;
      state[i] = (state[i]! + 1) % 3;
      changes.record(name(i), seq, at, machine(i, STATES[state[i]!]!, at));
    }
    for (let f = 0; f < FLAPPING; f++) changes.record(name(f), seq, at, machine(f, seq % 2 ? 'UP' : 'LATE', at));
  }
  const buildMs = performance.now() - built;
  const bytes = heap() - before;
  const index = {
    changes,
    timeline,
    directory: new StreamDirectory(),
    backfilled: () => true,
    covers: async () => true,
  };
  // Only the index is read: a history with no stream behind it.
  const history = new StatusHistory(undefined as never, { current: () => undefined, subscribe: () => () => undefined });
  history.useIndex(index);
  const times: number[] = [];
  let entries = 0;
  const until = new Date(t0 + DAY_COMPOSITIONS * 250);
  for (let q = 0; q < QUERIES; q++) {
    const i = q < FLAPPING ? q : (q * 7919) % machines;
    const t = performance.now();
    entries += (await machineHistory(history, { name: name(i), until })).length;
    times.push(performance.now() - t);
  }
  const report = {
    bytes,
    buildMs,
    compositions: timeline.size,
    median: pct(times, 0.5),
    p99: pct(times, 0.99),
    max: Math.max(...times),
    entries: entries / QUERIES,
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
  process.exit(0);
}

async function indexAt(lines: string[], machines: number): Promise<void> {
  const load = loadavg()[0]!.toFixed(1);
  const r = await inChild('--index', machines);
  lines.push(
    `| ${machines.toLocaleString('en')} | ${r.compositions.toLocaleString('en')} | ${mb(r.bytes)} (${Math.round(r.bytes / machines)} B a machine) | ${(r.buildMs / 1000).toFixed(1)} s | ${r.median.toFixed(3)} / ${r.p99.toFixed(3)} / ${r.max.toFixed(1)} ms | ${r.entries.toFixed(1)} | ${load} |`,
  );
}

const NOTHING = Object.freeze({ added: [], addedAt: [], changed: [], removed: [], order: null });

/**
 * A minute of compositions after a snapshot, each hearing a 240th of the machines again (a beat
 * moves `lastHeardAt` past LAST_HEARD_GRAIN_MS) and a few going LATE or back UP: every machine
 * once, as a steady mesh. One at a time, with the machines changed: nothing else holds the minute.
 */
function* aMinuteOfBeats(machines: number): Generator<{ composition: Composition; changed: MachineStatus[] }> {
  // As read from the stream's JSON: every machine a value of its own.
  const first: Composition = JSON.parse(JSON.stringify(aComposition(1, machines)));
  const t0 = Date.parse(first.composedAt);
  yield { composition: first, changed: [] };
  let c = first;
  const share = Math.ceil(machines / DELTAS);
  for (let k = 1; k <= DELTAS; k++) {
    const at = t0 + k * 250;
    const heard = new Date(at + 60_000).toISOString();
    const list = c.machines.slice();
    const changed = new Set<number>();
    // Each machine changed is a value of its own (its strings and lists), as one read from a delta's JSON is.
    const anew = (m: MachineStatus): MachineStatus => JSON.parse(JSON.stringify(m));
    for (let i = (k - 1) * share; i < Math.min(machines, k * share); i++) {
      list[i] = anew({ ...list[i]!, lastHeardAt: heard });
      changed.add(i);
    }
    for (let j = 0; j < 5; j++) {
      const i = (k * 7919 + j * 104_729) % machines;
      list[i] = anew({ ...list[i]!, state: list[i]!.state === 'UP' ? 'LATE' : 'UP' });
      changed.add(i);
    }
    c = { ...c, seq: c.seq + 1, composedAt: new Date(at).toISOString(), trigger: 'news', machines: list };
    yield { composition: c, changed: [...changed].map((i) => list[i]!) };
  }
}

/**
 * A window without a bound over a minute of beats, heard directly (each with a delta naming its
 * changed machines) so that nothing else (the feed's resume deltas) holds the minute, and the
 * composition held at its end.
 */
function aMinuteHeard(machines: number): { window: RecentWindow; last: Composition } {
  const window = new RecentWindow({
    bytesMax: Number.POSITIVE_INFINITY,
    compositionsMax: Number.POSITIVE_INFINITY,
    checkpointEveryMs: LOOK_BACK_CHECKPOINT_EVERY_MS,
  });
  let last: Composition | undefined;
  for (const { composition, changed } of aMinuteOfBeats(machines)) {
    const delta = last && {
      seq: composition.seq,
      baseSeq: last.seq,
      composedAt: composition.composedAt,
      tookMs: composition.tookMs,
      trigger: composition.trigger,
      machines: { ...NOTHING, changed },
      seats: NOTHING,
      plans: NOTHING,
      repeatedCauses: NOTHING,
      unheldSeats: NOTHING,
      callsRunning: null,
      handActsThisWeek: null,
    };
    window.hear(composition, delta as StatusDelta | undefined);
    last = composition;
  }
  return { window, last: last! };
}

/** Where the minute heard is held while it is weighed: never in a variable of the weighing function (an interpreter's register would keep it). */
interface Weighing {
  window?: RecentWindow;
  last?: Composition;
}

/** Hears the minute into `into`. */
function hearAMinute(into: Weighing, machines: number): void {
  Object.assign(into, aMinuteHeard(machines));
}

/** Drops the window of `from` (the composition held at its end stays), saying what it held. */
function dropWindow(from: Weighing): { compositions: number; checkpoints: number; estimated: number } {
  const said = { compositions: from.window!.size, checkpoints: from.window!.checkpoints, estimated: from.window!.bytes };
  from.window = undefined;
  return said;
}

/**
 * The heap a window holds for a minute of beats beyond the composition held at its end: what it
 * costs when it is all the replica keeps of the minute.
 */
function weighAMinute(machines: number, heap: () => number): { bytes: number; compositions: number; checkpoints: number; estimated: number } {
  const weighing: Weighing = {};
  hearAMinute(weighing, machines);
  const withWindow = heap();
  const weighed = dropWindow(weighing);
  const bytes = withWindow - heap();
  if (weighing.last?.machines.length !== machines) throw new Error('the minute lost machines');
  return { bytes, ...weighed };
}

/**
 * In a child with --expose-gc: a status stream of a snapshot and a minute of beats at `machines`,
 * then `statusAt(seq:)` of its compositions from the window (in memory), from the stream (the
 * snapshot and the deltas), and the window's heap per minute it holds.
 */
async function statusAtRole(machines: number): Promise<void> {
  const heap = () => {
    global.gc?.();
    return process.memoryUsage().heapUsed;
  };
  const s = await aStatusStream(4 * 2 ** 30);
  const windowMb = Number(process.env.BENCH_LOOK_BACK_WINDOW_MB ?? LOOK_BACK_WINDOW_BYTES_MAX / 2 ** 20);
  const indexed = new StatusHistory(s.link, s.feed);
  // The index's own window held to its newest checkpoint: the two below are weighed and read instead.
  const index = startLookBackIndex(s.feed, indexed, pino({ level: 'silent' }), {
    window: { bytesMax: 1, compositionsMax: LOOK_BACK_WINDOW_COMPOSITIONS_MAX, checkpointEveryMs: LOOK_BACK_CHECKPOINT_EVERY_MS },
  });
  const minute = weighAMinute(machines, heap);
  // A window without a bound, to read the whole minute from, and one at the replica's bound, to say what it holds.
  let whole: RecentWindow | undefined = new RecentWindow({
    bytesMax: Number.POSITIVE_INFINITY,
    compositionsMax: Number.POSITIVE_INFINITY,
    checkpointEveryMs: LOOK_BACK_CHECKPOINT_EVERY_MS,
  });
  let bounded: RecentWindow | undefined = new RecentWindow({
    bytesMax: windowMb * 2 ** 20,
    compositionsMax: LOOK_BACK_WINDOW_COMPOSITIONS_MAX,
    checkpointEveryMs: LOOK_BACK_CHECKPOINT_EVERY_MS,
  });
  const unsubscribe = s.feed.subscribe((c, d) => {
    whole?.hear(c, d);
    bounded?.hear(c, d);
  });
  try {
    const seqs: number[] = [];
    const built = performance.now();
    for (const { composition } of aMinuteOfBeats(machines)) {
      await s.feed.publish!(composition, seqs.length ? 'news' : 'start');
      seqs.push(composition.seq);
    }
    const publishS = (performance.now() - built) / 1000;
    await index.backfill;
    while (!index.directory.placeOf(seqs.at(-1)!)) await new Promise((r) => setTimeout(r, 20));
    // The deepest from its checkpoint: the composition before the last (the feed's current answers the last itself).
    const target = seqs.at(-2)!;
    const time = async (from: RunningLookBackIndex) => {
      const times: number[] = [];
      for (let r = 0; r < STATUS_AT_RUNS; r++) {
        // A history of its own each run: nothing cached.
        const fresh = new StatusHistory(s.link, s.feed);
        fresh.useIndex(from);
        const t = performance.now();
        const got = await fresh.statusAt({ seq: target });
        times.push(performance.now() - t);
        if (got.seq !== target || got.machines.length !== machines) throw new Error('statusAt answered another composition');
      }
      return times;
    };
    const fromWindow = await time({ ...index, recent: whole } as RunningLookBackIndex);
    const fromStream = await time({ ...index, recent: undefined } as RunningLookBackIndex);
    const locate = performance.now();
    index.directory.placeOf(target);
    const lookUp = performance.now() - locate;
    const span = bounded.span();
    const held = {
      compositions: bounded.size,
      checkpoints: bounded.checkpoints,
      seconds: span ? (span.last - span.first) / 4 : 0,
      windowMb,
      target: !!bounded.composition(target),
    };
    whole = undefined;
    bounded = undefined;
    const report = {
      publishS,
      lookUpUs: lookUp * 1000,
      fromWindow: { median: pct(fromWindow, 0.5), max: Math.max(...fromWindow) },
      fromStream: { median: pct(fromStream, 0.5), max: Math.max(...fromStream) },
      minute,
      held,
    };
    process.stdout.write(`${JSON.stringify(report)}\n`);
  } finally {
    unsubscribe();
    index.stop();
    await s.close();
  }
  process.exit(0);
}

/** Runs `--role machines` in a child with --expose-gc and returns the JSON it prints last. */
async function inChild(role: string, machines: number): Promise<Record<string, any>> {
  const child = spawn(
    process.execPath,
    ['--expose-gc', '--max-old-space-size=8192', '--import', 'tsx', fileURLToPath(import.meta.url), role, String(machines)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  await new Promise((resolve) => child.on('exit', resolve));
  return JSON.parse(out.trim().split('\n').at(-1)!);
}

async function statusAtAt(lines: string[], machines: number): Promise<void> {
  const load = loadavg()[0]!.toFixed(1);
  const r = await inChild('--status-at', machines);
  const ms = (x: { median: number; max: number } | undefined) => (x ? `${x.median.toFixed(1)} ms (max ${x.max.toFixed(1)})` : 'not held');
  lines.push(
    `| ${machines.toLocaleString('en')} | ${r.lookUpUs.toFixed(1)} µs | ${ms(r.fromWindow)} | ${ms(r.fromStream)} | ${(r.minute.bytes / 2 ** 20).toFixed(1)} MB, ${Math.round(r.minute.bytes / machines)} B a machine (${r.minute.compositions} compositions, ${r.minute.checkpoints} checkpoints; estimated ${mb(r.minute.estimated)}) | ${r.held.compositions} (${r.held.seconds.toFixed(0)} s, ${r.held.checkpoints} checkpoints${r.held.target ? '' : '; not the one asked'}) at ${r.held.windowMb} MB | ${r.publishS.toFixed(0)} s | ${load} |`,
  );
}

export async function run(): Promise<string> {
  const lines = [
    `Machine: ${cpus().length} cores, load ${loadavg()[0]!.toFixed(1)} at start (indicative: the machine is shared). Rerun: \`npm run bench -- look-back\`.`,
    '',
  ];
  lines.push(
    `### The look-back index over a day (${DAY_COMPOSITIONS.toLocaleString('en')} compositions, ${CHANGES_PER_MACHINE} changes a machine on average, ${FLAPPING} machines flapping every composition)`,
    '',
    '| machines | compositions | index heap (after GC) | built in | `machineHistory` (a day) median / p99 / max | entries answered | load |',
    '|---|---|---|---|---|---|---|',
  );
  for (const machines of sizes('BENCH_LOOK_BACK_SIZES', '100000,1000000')) await indexAt(lines, machines);
  lines.push(
    '',
    `### \`statusAt(seq:)\` of the composition ${DELTAS - 1} after its snapshot in a minute of beats (every machine heard once), uncached (${STATUS_AT_RUNS} runs)`,
    '',
    "| machines | finding it (index) | from the window (in memory) median (max) | from the stream (snapshot and deltas) | the window's heap for that minute (after GC) | what the default window holds | publishing the minute | load |",
    '|---|---|---|---|---|---|---|---|',
  );
  for (const machines of sizes('BENCH_LOOK_BACK_STATUS_AT', '10000,100000')) await statusAtAt(lines, machines);
  return lines.join('\n');
}

const roleAt = process.argv.indexOf('--index');
if (roleAt >= 0) await indexRole(Number(process.argv[roleAt + 1]));
const statusAtRoleAt = process.argv.indexOf('--status-at');
if (statusAtRoleAt >= 0) await statusAtRole(Number(process.argv[statusAtRoleAt + 1]));

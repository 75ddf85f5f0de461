import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import type { MachineStatus } from '../src/services/status/composition.js';
import { StatusHistory } from '../src/services/status/looking-back/history.js';
import { type RunningLookBackIndex, startLookBackIndex } from '../src/services/status/looking-back/look-back-index.js';
import { MachineChanges } from '../src/services/status/looking-back/machine-changes.js';
import { machineHistory } from '../src/services/status/looking-back/machine-history.js';
import { StreamDirectory } from '../src/services/status/looking-back/stream-directory.js';
import { Timeline } from '../src/services/status/looking-back/timeline.js';
import { aComposition, oneMachineChanged } from '../test/fixtures/compositions.js';
import { aStatusStream } from '../test/fixtures/status-stream.js';

// Looking back at scale (issue 37): the look-back index's memory and `machineHistory`'s latency at
// 100,000 and 1,000,000 machines over a synthetic day (no agents, no store), and `statusAt`'s from
// a status stream of synthetic compositions. `npm run bench -- look-back`; BENCH_LOOK_BACK_SIZES
// (default 100000,1000000) and BENCH_LOOK_BACK_STATUS_AT (default 10000,100000) choose the sizes
// (empty: that part is skipped).

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
  const child = spawn(
    process.execPath,
    ['--expose-gc', '--max-old-space-size=8192', '--import', 'tsx', fileURLToPath(import.meta.url), '--index', String(machines)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  await new Promise((resolve) => child.on('exit', resolve));
  const r = JSON.parse(out.trim().split('\n').at(-1)!);
  lines.push(
    `| ${machines.toLocaleString('en')} | ${r.compositions.toLocaleString('en')} | ${mb(r.bytes)} (${Math.round(r.bytes / machines)} B a machine) | ${(r.buildMs / 1000).toFixed(1)} s | ${r.median.toFixed(3)} / ${r.p99.toFixed(3)} / ${r.max.toFixed(1)} ms | ${r.entries.toFixed(1)} | ${load} |`,
  );
}

/** statusAt of the composition furthest from its snapshot (a minute of deltas), from the index and by searching the stream. */
async function statusAtAt(lines: string[], machines: number): Promise<void> {
  const load = loadavg()[0]!.toFixed(1);
  const s = await aStatusStream(4 * 2 ** 30);
  let index: RunningLookBackIndex | undefined;
  try {
    let c = aComposition(1, machines);
    await s.feed.publish!(c, 'start');
    for (let i = 0; i < DELTAS; i++) await s.feed.publish!((c = oneMachineChanged(c, c.seq + 1, (i * 7919) % machines)), 'news');
    const target = c.seq - 1;
    const indexed = new StatusHistory(s.link, s.feed);
    index = startLookBackIndex(s.feed, indexed, pino({ level: 'silent' }));
    await index.backfill;
    while (!index.directory.placeOf(target)) await new Promise((r) => setTimeout(r, 20));
    const time = async (history: StatusHistory) => {
      const times: number[] = [];
      for (let r = 0; r < STATUS_AT_RUNS; r++) {
        // A history of its own each run: nothing cached.
        const fresh = new StatusHistory(s.link, s.feed);
        if (history.index) fresh.useIndex(history.index);
        const t = performance.now();
        const got = await fresh.statusAt({ seq: target });
        times.push(performance.now() - t);
        if (got.seq !== target || got.machines.length !== machines) throw new Error('statusAt answered another composition');
      }
      return times;
    };
    const fromIndex = await time(indexed);
    // Stepping forward within a minute: from the composition rebuilt before (a checkpoint), only the deltas between.
    const stepped: number[] = [];
    for (let r = 0; r < STATUS_AT_RUNS; r++) {
      const fresh = new StatusHistory(s.link, s.feed);
      fresh.useIndex(indexed.index!);
      await fresh.statusAt({ seq: target - DELTAS / 2 });
      const t = performance.now();
      await fresh.statusAt({ seq: target });
      stepped.push(performance.now() - t);
    }
    const searched = await time(new StatusHistory(s.link, s.feed));
    const locate = performance.now();
    indexed.index!.directory.placeOf(target);
    const lookUp = performance.now() - locate;
    lines.push(
      `| ${machines.toLocaleString('en')} | ${(lookUp * 1000).toFixed(1)} µs | ${pct(fromIndex, 0.5).toFixed(0)} ms (max ${Math.max(...fromIndex).toFixed(0)}) | ${pct(stepped, 0.5).toFixed(0)} ms (max ${Math.max(...stepped).toFixed(0)}) | ${pct(searched, 0.5).toFixed(0)} ms (max ${Math.max(...searched).toFixed(0)}) | ${load} |`,
    );
  } finally {
    index?.stop();
    await s.close();
  }
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
    `### \`statusAt(seq:)\`, ${DELTAS} deltas after its snapshot, uncached (${STATUS_AT_RUNS} runs)`,
    '',
    `| machines | finding it (index) | rebuilt from the index | from the one ${DELTAS / 2} deltas before, rebuilt just before (a checkpoint) | rebuilt after a binary search of the stream | load |`,
    '|---|---|---|---|---|---|',
  );
  for (const machines of sizes('BENCH_LOOK_BACK_STATUS_AT', '10000,100000')) await statusAtAt(lines, machines);
  return lines.join('\n');
}

const roleAt = process.argv.indexOf('--index');
if (roleAt >= 0) await indexRole(Number(process.argv[roleAt + 1]));

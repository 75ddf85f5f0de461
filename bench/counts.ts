import { loadavg } from 'node:os';
import { execute, parse } from 'graphql';
import { schema } from '../src/schema/index.js';
import { countStates, StatusCountSeries } from '../src/services/status/looking-back/counts.js';
import { aComposition } from '../test/fixtures/compositions.js';

// statusCounts' costs in-process: recording each composition (counting its machines' states) and
// answering a day at a minute's step from a day of compositions, through the schema.
const MACHINES = Number(process.env.BENCH_MACHINES ?? 10_000);
/** A day of compositions at 4 a second (the composer's most, COMPOSE_MIN_GAP_MS): 345,600. */
const DAY_MS = 24 * 3600_000;
const EVERY_MS = 250;
const RUNS = 20;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

export async function run(): Promise<string> {
  const composition = aComposition(1, MACHINES);
  // Counting one composition's machines, as each replica does for each composition it hears.
  const counting: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    countStates(composition.machines);
    counting.push(performance.now() - t);
  }
  const series = new StatusCountSeries(DAY_MS);
  const start = Date.now() - DAY_MS;
  const recordStart = performance.now();
  let n = 0;
  for (let t = start; t <= start + DAY_MS; t += EVERY_MS, n++) {
    // The counts move most compositions (the worst case for what is kept).
    const late = n % 37;
    series.record(t, { up: MACHINES - late - (n % 5), late, silent: n % 5 });
  }
  const recordMs = performance.now() - recordStart;
  const document = parse('query($since: DateTime, $until: DateTime) { statusCounts(since: $since, until: $until, stepSeconds: 60) { at up late silent } }');
  const now = new Date(start + DAY_MS);
  const answering: number[] = [];
  let points = 0;
  let bytes = 0;
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    const result = await execute({
      schema,
      document,
      variableValues: { since: new Date(start).toISOString(), until: now.toISOString() },
      contextValue: { caller: { name: 'bench', scopes: new Set(['read']) }, mesh: { statusCounts: series }, now },
    });
    if (result.errors) throw new Error(JSON.stringify(result.errors));
    bytes = JSON.stringify(result).length;
    answering.push(performance.now() - t);
    points = ((result.data?.statusCounts ?? []) as unknown[]).length;
  }
  return [
    `load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} (a shared machine: figures are upper bounds)`,
    '',
    '| what | figure |',
    '|---|---|',
    `| counting one composition of ${MACHINES.toLocaleString('en')} machines (median of ${RUNS}) | ${median(counting).toFixed(2)} ms |`,
    `| recording a day of compositions (${n.toLocaleString('en')}, one each ${EVERY_MS} ms) | ${recordMs.toFixed(0)} ms in all; ${series.size.toLocaleString('en')} points kept |`,
    `| statusCounts, a day at a minute's step (${points} points, ${(bytes / 1024).toFixed(0)} KB), through the schema: median / max of ${RUNS} | **${median(answering).toFixed(1)} ms** / ${Math.max(...answering).toFixed(1)} ms |`,
  ].join('\n');
}

import { cpus, loadavg } from 'node:os';
import { promisify } from 'node:util';
import { gzip, constants as zlib } from 'node:zlib';
import { noteEdits } from '../src/kernel/list-edits.js';
import { type Composition, LAST_HEARD_GRAIN_MS } from '../src/services/status/composition.js';
import { diffCompositions } from '../src/services/status/delta/algebra.js';
import { compositionAssembler } from '../src/services/status/replicating/assemble.js';
import { encodeComposition, encodeStreamEntry } from '../src/services/status/replicating/encode.js';
import { type Coarsening, coarsenLastHeard } from '../src/services/status/replicating/stream-publisher.js';
import { aComposition } from '../test/fixtures/compositions.js';

const MACHINES = Number(process.env.BENCH_MACHINES ?? 1_000_000);
const SITES = 100;
const ROUNDS = 3;
/** NATS' default max_payload, the parts a snapshot is cut into. */
const MAX_PAYLOAD = 1024 * 1024;

const gzipAsync = promisify(gzip);
const ms = (x: number) => `${x.toFixed(0)} ms`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/**
 * `work`'s wall time and the longest the event loop waited meanwhile: a 1 ms timer's longest gap,
 * what a request or a beat arriving then would have waited before the gateway read it.
 */
async function stalls(work: () => Promise<unknown>): Promise<{ wallMs: number; stallMs: number }> {
  let last = performance.now();
  let stallMs = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 1);
  const started = performance.now();
  await work();
  const wallMs = performance.now() - started;
  clearInterval(ticker);
  stallMs = Math.max(stallMs, performance.now() - last);
  return { wallMs, stallMs };
}

/**
 * What the serving replica pays to publish at a million machines. Each composition: its machines
 * heard only again are given back their item before (`coarsenLastHeard`), then the delta is
 * found. A snapshot, every SNAPSHOT_EVERY_MS: put
 * into the status stream, then sent whole on `<subjects>.status`. Measured: the two encodings'
 * wall time and the longest the event loop stood still meanwhile, against the same composition
 * written the way it was before (JSON.stringify and Buffer.from in one go, each time); and what a
 * replica paid to join, gunzip and parse a whole composition it held already (now skipped by its
 * seq header).
 */
export async function run(): Promise<string> {
  const whole = aComposition(1, MACHINES, 50);
  const machines = whole.machines.map((m, i) => ({ ...m, site: `site-${String(i % SITES).padStart(3, '0')}` }));
  // A fresh composition object each round: the encoding is kept by the composition it is of.
  const composition = (round: number) => ({ ...whole, seq: round + 1, machines }) as Composition;
  const before: { wallMs: number; stallMs: number }[] = [];
  const after: { wallMs: number; stallMs: number }[] = [];
  const heard: { wallMs: number; stallMs: number }[] = [];
  let parts = 0;
  let bytes = 0;
  for (let round = 0; round < ROUNDS; round++) {
    before.push(
      await stalls(async () => {
        for (let i = 0; i < 2; i++) {
          const json = Buffer.from(JSON.stringify(composition(round)));
          await gzipAsync(json, { level: zlib.Z_BEST_SPEED });
        }
      }),
    );
    const c = composition(round);
    let whole: Awaited<ReturnType<typeof encodeComposition>> = [];
    after.push(
      await stalls(async () => {
        await encodeStreamEntry('snapshot', c, MAX_PAYLOAD, { counts: { up: MACHINES, late: 0, silent: 0 } });
        whole = await encodeComposition(c, MAX_PAYLOAD);
      }),
    );
    parts = whole.length;
    bytes = whole.reduce((n, p) => n + p.data.byteLength, 0);
    const assemble = compositionAssembler();
    heard.push(
      await stalls(async () => {
        for (const part of whole) await assemble({ data: part.data, headers: part.headers as never });
      }),
    );
  }
  // Each composition after one machine's heartbeat (1 s after the one before): coarsened, then diffed.
  const coarsening: { wallMs: number; stallMs: number }[] = [];
  const diffing: number[] = [];
  let previous = composition(ROUNDS);
  for (let round = 0; round < 2 * ROUNDS; round++) {
    const at = (round * 7_919) % MACHINES;
    const next = { ...previous, seq: previous.seq + 1, machines: previous.machines.slice() };
    const beating = next.machines[at]!;
    next.machines[at] = { ...beating, lastHeardAt: new Date(Date.parse(beating.lastHeardAt) + 1_000).toISOString() };
    let coarse = next;
    coarsening.push(await stalls(async () => (coarse = coarsenLastHeard(previous, next))));
    const started = performance.now();
    diffCompositions(previous, coarse);
    diffing.push(performance.now() - started);
    previous = coarse;
  }
  // The same, as the serving replica makes them: the view's list with the machine judged again
  // written in (`withJudged` notes the place), coarsened against the coarsening before it.
  const atPlaces: { wallMs: number; stallMs: number }[] = [];
  const diffingAtPlaces: number[] = [];
  let composed = previous.machines;
  let last: Coarsening | undefined;
  for (let round = 0; round < 2 * ROUNDS; round++) {
    const at = (round * 7_919) % MACHINES;
    const machines = composed.slice();
    const beating = machines[at]!;
    machines[at] = { ...beating, lastHeardAt: new Date(Date.parse(beating.lastHeardAt) + 1_000).toISOString() };
    noteEdits(machines, composed, [at]);
    const next = { ...previous, seq: previous.seq + 1, machines };
    let coarse = next;
    atPlaces.push(await stalls(async () => (coarse = coarsenLastHeard(previous, next, LAST_HEARD_GRAIN_MS, last))));
    const started = performance.now();
    diffCompositions(previous, coarse);
    diffingAtPlaces.push(performance.now() - started);
    last = { composed: machines, published: coarse.machines };
    composed = machines;
    previous = coarse;
  }
  const line = (what: string, xs: { wallMs: number; stallMs: number }[]) =>
    `| ${what} | ${ms(median(xs.map((x) => x.wallMs)))} | ${ms(median(xs.map((x) => x.stallMs)))} (max ${ms(Math.max(...xs.map((x) => x.stallMs)))}) |`;
  return [
    `${MACHINES.toLocaleString('en')} machines over ${SITES} sites, 50 seats; ${ROUNDS} rounds, medians (${cpus().length} cores, load ${loadavg()[0]?.toFixed(1)} at the end)`,
    `the snapshot gzipped: ${(bytes / 2 ** 20).toFixed(1)} MiB in ${parts} parts of ${MAX_PAYLOAD / 1024} KiB`,
    '',
    '| one snapshot, at the serving replica | wall | longest event-loop stall |',
    '|---|---|---|',
    line('written twice in one go (JSON.stringify, Buffer.from, gzip), as before', before),
    line('written in pieces once, for the stream and the status subject', after),
    line('a whole composition heard on the status subject, joined, gunzipped and parsed (now skipped when held)', heard),
    '',
    `each composition after one heartbeat (${2 * ROUNDS} of them): coarsened (\`coarsenLastHeard\`) median ${ms(median(coarsening.map((x) => x.wallMs)))}, max ${ms(Math.max(...coarsening.map((x) => x.wallMs)))}; its delta (\`diffCompositions\`) median ${ms(median(diffing))}`,
    `the same made from the view's list as noted (\`noteEdits\`) and coarsened against the coarsening before: coarsened median ${ms(median(atPlaces.map((x) => x.wallMs)))}, max ${ms(Math.max(...atPlaces.map((x) => x.wallMs)))}; its delta median ${ms(median(diffingAtPlaces))}`,
  ].join('\n');
}

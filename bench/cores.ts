import { cpus, loadavg } from 'node:os';
import { Worker } from 'node:worker_threads';

// How much the machine's cores give at once, and what memory costs on it. The suite's time
// (test/README.md) and every figure taken beside other work depend on it: two cores that give
// twice one core's work, or much less when the host shares them or when each page of memory a
// process touches first costs the host a trap.

/** Allocating work (objects made and sorted, as a gateway's and a test's work mostly is): about 3 s on one core here. */
const ALLOCATING = `
  for (let round = 0; round < 20; round++) {
    const objects = [];
    for (let i = 0; i < 300000; i++) objects.push({ i, name: 'm' + i });
    objects.sort((a, b) => b.i - a.i);
  }
`;
/** Arithmetic alone, in registers: no memory is touched, so only the cores themselves count. */
const ARITHMETIC = `
  let x = 1;
  for (let i = 0; i < 4e8; i++) x = (x * 1103515245 + 12345) | 0;
  if (x === 42) console.log(x);
`;
/** Fresh memory touched once per page (a process's heap growing, a new process starting). */
const FRESH_BYTES = 256 * 1024 * 1024;
const PAGE_BYTES = 4096;

const once = (work: string) =>
  new Promise<number>((resolve, reject) => {
    const worker = new Worker(`const t = performance.now();\n${work}\nrequire('node:worker_threads').parentPort.postMessage(performance.now() - t);`, {
      eval: true,
    });
    worker.once('message', (ms: number) => {
      resolve(ms);
      void worker.terminate();
    });
    worker.once('error', reject);
  });

/** One core alone, then one worker thread per core at once: the ms of each, and the cores' work at once in units of one core's. */
async function alongside(work: string, cores: number): Promise<{ alone: number; slowest: number; throughput: number }> {
  const alone = await once(work);
  const slowest = Math.max(...(await Promise.all(Array.from({ length: cores }, () => once(work)))));
  return { alone, slowest, throughput: (cores * alone) / slowest };
}

/** The µs a first touch of a fresh page costs (the kernel's page fault, and the host's under it), from this process's own count of faults. */
function pageFaultMicros(): { micros: number; faults: number } {
  const before = process.resourceUsage().minorPageFault;
  const t = performance.now();
  Buffer.allocUnsafeSlow(FRESH_BYTES).fill(1);
  const ms = performance.now() - t;
  const faults = process.resourceUsage().minorPageFault - before;
  return { micros: (ms * 1000) / Math.max(faults, 1), faults };
}

export async function run(): Promise<string> {
  const cores = cpus().length;
  const before = loadavg().map((l) => l.toFixed(1));
  const allocating = await alongside(ALLOCATING, cores);
  const arithmetic = await alongside(ARITHMETIC, cores);
  const fault = pageFaultMicros();
  return [
    `load average ${before.join(' ')} before; ${cores} cores`,
    '',
    '| what | allocating | arithmetic |',
    '|---|---|---|',
    `| the work on one core, alone | ${allocating.alone.toFixed(0)} ms | ${arithmetic.alone.toFixed(0)} ms |`,
    `| the same work on each of ${cores} cores at once (slowest) | ${allocating.slowest.toFixed(0)} ms | ${arithmetic.slowest.toFixed(0)} ms |`,
    `| what ${cores} cores give at once, in cores | **${allocating.throughput.toFixed(2)}** | **${arithmetic.throughput.toFixed(2)}** |`,
    '',
    `A first touch of a fresh ${PAGE_BYTES / 1024} KiB page: **${fault.micros.toFixed(1)} µs** (${FRESH_BYTES / 1024 / 1024} MiB, ${fault.faults} faults).`,
  ].join('\n');
}

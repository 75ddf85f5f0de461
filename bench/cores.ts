import { cpus, loadavg } from 'node:os';
import { Worker } from 'node:worker_threads';

// How much the machine's cores give at once: the same allocating work (objects made and sorted, as
// a gateway's and a test's work mostly is) on one thread alone, then on one thread a core at once.
// The suite's time (test/README.md) and every figure taken beside other work depend on it: two
// cores that give twice one core's work, or much less when the host shares them.

/** The work: ROUNDS rounds of OBJECTS objects made and sorted; about 3 s on one core here. */
const WORK = `
  const t = performance.now();
  for (let round = 0; round < 20; round++) {
    const objects = [];
    for (let i = 0; i < 300000; i++) objects.push({ i, name: 'm' + i });
    objects.sort((a, b) => b.i - a.i);
  }
  require('node:worker_threads').parentPort.postMessage(performance.now() - t);
`;

const once = () =>
  new Promise<number>((resolve, reject) => {
    const worker = new Worker(WORK, { eval: true });
    worker.once('message', (ms: number) => {
      resolve(ms);
      void worker.terminate();
    });
    worker.once('error', reject);
  });

export async function run(): Promise<string> {
  const cores = cpus().length;
  const before = loadavg().map((l) => l.toFixed(1));
  const alone = await once();
  const together = await Promise.all(Array.from({ length: cores }, once));
  const slowest = Math.max(...together);
  // The work all cores did at once, in units of what one core does alone in the same time.
  const throughput = (cores * alone) / slowest;
  return [
    `load average ${before.join(' ')} before; ${cores} cores`,
    '',
    '| what | figure |',
    '|---|---|',
    `| the work on one core, alone | ${alone.toFixed(0)} ms |`,
    `| the same work on each of ${cores} cores at once (slowest) | ${slowest.toFixed(0)} ms |`,
    `| what ${cores} cores give at once, in cores | **${throughput.toFixed(2)}** |`,
  ].join('\n');
}

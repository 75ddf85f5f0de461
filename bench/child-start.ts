import { readFileSync, symlinkSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnGateway } from '../test/fixtures/child.js';
import { testEnv } from '../test/fixtures/services.js';
import { runBuilder } from './compiled.js';

// What a child gateway costs to start (the tests start a few dozen: sigkill alone restarts ten, the
// bad day three replicas): the CPU a gateway process has used when it logs that it serves, on a
// PostgreSQL database and NATS names of its own (`testEnv`, as a test file's), for the gateway
// bundled with its packages (as the tests start it, test/build-gateway.ts) and compiled module for
// module (as they did before).

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STARTS = 9;

/** Builds both ways (in a process of its own: `runBuilder`); answers both entries. */
function buildBoth(): { bundled: string; modules: string } {
  const main = JSON.stringify(join(ROOT, 'src/main.ts'));
  const out = (dir: string) => JSON.stringify(join(ROOT, 'dist/bench/child-start', dir));
  const [bundled, modules] = runBuilder(
    `console.log(await builder.bundleGateway(${main}, ${out('bundled')}));\nconsole.log(await builder.compileModules([${main}], ${out('modules')}));`,
  ).slice(-2) as [string, string];
  for (const dir of ['bundled', 'modules']) symlinkSync(join(ROOT, 'dist/dashboard'), join(ROOT, 'dist/bench/child-start', dir, 'dashboard'), 'dir');
  return { bundled, modules };
}

/** Starts `entry` and answers the CPU (user + system, ms) it had used when it logged that it serves. */
async function startCpu(entry: string, env: Record<string, string>): Promise<number> {
  const gateway = await spawnGateway(env, 60_000, undefined, entry);
  try {
    const fields = readFileSync(`/proc/${gateway.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } finally {
    await gateway.kill('SIGKILL');
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function run(): Promise<string> {
  const { bundled, modules } = buildBoth();
  const { env, cleanup } = await testEnv('bench_start');
  const before = loadavg().map((l) => l.toFixed(1));
  const cpu: Record<'bundled' | 'modules', number[]> = { bundled: [], modules: [] };
  try {
    // The first start makes the store and the streams; alternating, the two ways see the same machine.
    await startCpu(bundled, env);
    for (let i = 0; i < STARTS; i++) {
      cpu.modules.push(await startCpu(modules, env));
      cpu.bundled.push(await startCpu(bundled, env));
    }
  } finally {
    await cleanup();
  }
  const row = (label: string, values: number[]) => `| ${label} | **${median(values)} ms** | ${Math.min(...values)}–${Math.max(...values)} ms |`;
  return [
    `load average ${before.join(' ')} before, ${loadavg()[0]!.toFixed(1)} after; ${STARTS} starts each, alternating`,
    '',
    '| the gateway | CPU when it serves (median) | range |',
    '|---|---|---|',
    row('bundled with its packages (the tests’ child gateways)', cpu.bundled),
    row('compiled module for module', cpu.modules),
  ].join('\n');
}

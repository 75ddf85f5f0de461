import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, symlinkSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { ADMIN_URL, admin } from './databases.js';

// What a child gateway costs to start (the tests start a few dozen: sigkill alone restarts ten, the
// bad day three replicas): the CPU a gateway process has used when it logs that it serves, on a
// PostgreSQL database and NATS names of its own, for the gateway bundled with its packages (as the
// tests start it, test/build-gateway.ts) and compiled module for module (as they did before).

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STARTS = 9;
const NATS_URL = process.env.BENCH_NATS_URL ?? 'nats://127.0.0.1:4222';

/** Builds both ways in a process of its own (vite's build would load this one); answers both entries. */
function buildBoth(): { bundled: string; modules: string } {
  const builder = pathToFileURL(join(ROOT, 'test/build-gateway.ts')).href;
  const main = join(ROOT, 'src/main.ts');
  const script = `const b = await import(${JSON.stringify(builder)});
    console.log(await b.bundleGateway(${JSON.stringify(main)}, ${JSON.stringify(join(ROOT, 'dist/bench/child-start/bundled'))}));
    console.log(await b.compileModules([${JSON.stringify(main)}], ${JSON.stringify(join(ROOT, 'dist/bench/child-start/modules'))}));`;
  const output = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  const [bundled, modules] = output.trim().split('\n').slice(-2) as [string, string];
  for (const dir of ['bundled', 'modules']) symlinkSync(join(ROOT, 'dist/dashboard'), join(ROOT, 'dist/bench/child-start', dir, 'dashboard'), 'dir');
  return { bundled, modules };
}

/** Starts `entry` and answers the CPU (user + system, ms) it had used when it logged that it serves. */
async function startCpu(entry: string, env: Record<string, string>): Promise<number> {
  const child: ChildProcess = spawn(process.execPath, [entry], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    await new Promise<void>((resolve, reject) => {
      let log = '';
      const read = (chunk: Buffer) => {
        log += chunk.toString();
        if (log.includes('serving GraphQL')) resolve();
      };
      child.stdout!.on('data', read);
      child.stderr!.on('data', read);
      child.once('exit', (code) => reject(new Error(`the gateway exited (${code}) before serving:\n${log}`)));
    });
    const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } finally {
    child.kill('SIGKILL');
    await new Promise((resolve) => (child.exitCode === null && child.signalCode === null ? child.once('exit', resolve) : resolve(undefined)));
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function run(): Promise<string> {
  const { bundled, modules } = buildBoth();
  const name = `bench_start_${randomBytes(4).toString('hex')}`;
  await admin(`create database "${name}"`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const env = { DATABASE_URL: url.toString(), NATS_URL, MESH_CONTROLLER: name, MESH_SUBJECTS: name, PORT: '0', LOG_LEVEL: 'info', LOG_FORMAT: 'json' };
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
    await admin(`drop database if exists "${name}" with (force)`);
    const nc = await connect({ servers: NATS_URL });
    const jsm = await jetstreamManager(nc);
    for await (const stream of jsm.streams.list()) if (stream.config.name.includes(name)) await jsm.streams.delete(stream.config.name);
    await nc.close();
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

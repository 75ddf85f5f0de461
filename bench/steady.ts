import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ChildGateway, GATEWAY_BUNDLE, spawnGateway } from '../test/fixtures/child.js';
import { metric, ReplicaUse, serving, sleep, startBadDayWorld, startMesh } from './bad-day-kit.js';
import { bundledChildGateway } from './compiled.js';
import { rowsWritten } from './million.js';
import { topFrames } from './profile.js';

// The replicas' CPU per beat in a steady mesh (issue 37): MACHINES machines beating every 10 s, two
// replicas on one PostgreSQL and a NATS server of the bench's own, no fault. After WARM_S, each
// replica's CPU-seconds over STEADY_S are divided by the beats sent meanwhile. BENCH_GATEWAY runs
// another build's bundle as the replicas (a baseline: the gateway bundle an older commit's test/build-gateway.ts makes);
// BENCH_PROFILE=1 writes a CPU profile of each replica over the window and prints its top frames.
const MACHINES = Number(process.env.BENCH_MACHINES ?? 100_000);
const HEARTBEAT_S = 10;
const WARM_S = Number(process.env.BENCH_WARM_S ?? 60);
const STEADY_S = Number(process.env.BENCH_STEADY_S ?? 60);
const GATEWAY = process.env.BENCH_GATEWAY;
const PROFILE = process.env.BENCH_PROFILE === '1';
/** With BENCH_PROFILE=1: a folder the profiles are copied into, each named by its replica, for a closer look. */
const KEEP_PROFILES = process.env.BENCH_PROFILE_KEEP;
const PROFILE_ENTRY = fileURLToPath(new URL('./profile-entry.mjs', import.meta.url));
/** Past this many machines the beats are published from two threads (a thread tops out near 8,000 a second). */
const ONE_THREAD_MACHINES = 20_000;

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

export async function run(): Promise<string> {
  if (!GATEWAY) bundledChildGateway();
  const lines = [`machines ${MACHINES} every ${HEARTBEAT_S} s; gateway ${GATEWAY ?? 'the source as it is now'}; load at the start ${load()}`];
  const world = await startBadDayWorld('steady', HEARTBEAT_S);
  const mesh = startMesh({
    prefix: 'st-',
    digits: 7,
    natsUrl: world.nats.url,
    subjects: world.env.MESH_SUBJECTS,
    heartbeatS: HEARTBEAT_S,
    tickMs: 100,
    machines: MACHINES,
    stoppedEvery: Number.MAX_SAFE_INTEGER,
    threads: MACHINES > ONE_THREAD_MACHINES ? 2 : 1,
  });
  const gateways: ChildGateway[] = [];
  const dirs: string[] = [];
  try {
    for (let i = 0; i < 2; i++) {
      const dir = mkdtempSync(join(tmpdir(), `mesh-steady-profile-${i}-`));
      dirs.push(dir);
      const env = PROFILE ? { ...world.env, PROFILE_DIR: dir, PROFILE_ENTRY: GATEWAY ?? GATEWAY_BUNDLE } : world.env;
      gateways.push(await spawnGateway(env, 60_000, undefined, PROFILE ? PROFILE_ENTRY : GATEWAY));
    }
    const use = new ReplicaUse();
    await sleep(WARM_S * 1000);
    use.read(gateways);
    if (PROFILE) for (const g of gateways) g.child.kill('SIGUSR2');
    const before = new Map(use.cpuS);
    const sentBefore = mesh.sent();
    const rowsBefore = await rowsWritten(world.databaseUrl);
    const composedBefore = await Promise.all(gateways.map((g) => metric(g, 'mesh_compose_seconds_count')));
    const startedAt = Date.now();
    await sleep(STEADY_S * 1000);
    use.read(gateways);
    const beats = mesh.sent() - sentBefore;
    const windowS = (Date.now() - startedAt) / 1000;
    const rowsAfter = await rowsWritten(world.databaseUrl);
    const composedAfter = await Promise.all(gateways.map((g) => metric(g, 'mesh_compose_seconds_count')));
    const perBeat = (replica: string) => ((use.cpuS.get(replica)! - before.get(replica)!) * 1e6) / beats;
    for (const g of gateways) lines.push(`${g.replica}${serving(g) ? ' (serving)' : ''}: ${perBeat(g.replica).toFixed(1)} µs of CPU a beat`);
    const both = gateways.reduce((sum, g) => sum + perBeat(g.replica), 0);
    lines.push(`both replicas: ${both.toFixed(1)} µs of CPU a beat (${beats} beats in ${windowS.toFixed(0)} s); load at the end ${load()}`);
    const composed = gateways.map((g, i) => `${g.replica} ${(((composedAfter[i] ?? 0) - (composedBefore[i] ?? 0)) / windowS).toFixed(2)}`);
    lines.push(`compositions a second (mesh_compose_seconds_count): ${composed.join(', ')}`);
    if (rowsBefore && rowsAfter) {
      const byTable = [...rowsAfter.byTable]
        .map(([table, n]) => [table, (n - (rowsBefore.byTable.get(table) ?? 0)) / windowS] as const)
        .filter(([, perS]) => perS >= 1)
        .sort((a, b) => b[1] - a[1])
        .map(([table, perS]) => `${table} ${perS.toFixed(0)}`);
      lines.push(`PostgreSQL rows written a second: ${((rowsAfter.total - rowsBefore.total) / windowS).toFixed(0)} (${byTable.join(', ')})`);
    }
    if (PROFILE) {
      for (const g of gateways) g.child.kill('SIGUSR2');
      await sleep(5_000);
      for (const [i, dir] of dirs.entries()) {
        for (const file of readdirSync(dir)) {
          if (KEEP_PROFILES) copyFileSync(join(dir, file), join(KEEP_PROFILES, `${gateways[i]!.replica}-${file}`));
          const top = topFrames(JSON.parse(readFileSync(join(dir, file), 'utf8')), 30);
          lines.push('', `replica ${gateways[i]!.replica}: ${(top.busyMs / 1000).toFixed(1)} CPU-s profiled`, ...top.frames);
        }
      }
    }
  } finally {
    mesh.stop();
    await mesh.end();
    for (const g of gateways) await g.kill('SIGTERM');
    await world.end();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
  return lines.join('\n');
}

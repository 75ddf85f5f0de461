import { writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { type ChildGateway, spawnGateway } from '../test/fixtures/child.js';
import {
  alive,
  anotherServes,
  machineName,
  metric,
  quantile,
  ReplicaUse,
  serving,
  sleep,
  startBadDayWorld,
  startMesh,
  stoppedBoundaries,
  TOOK_LEASE,
} from './bad-day-kit.js';
import { bundledChildGateway } from './compiled.js';

// A bad day at scale (issue 19): MACHINES machines beating every 10 s (10,000 beats a second at
// 100,000), two replicas on one PostgreSQL and a NATS server of the bench's own; the serving
// replica SIGKILLed (a replacement started), the serving one then SIGSTOPped for 20 s, then the
// NATS server restarted. Every second each live replica's status is read. Reports false LATE /
// SILENT machine-seconds (machines that kept beating shown not UP), false UP (a stopped machine
// shown UP or LATE after it was shown SILENT), how late machines that really
// stopped were shown LATE and SILENT past their boundaries, the news lag p50/p99, each replica's
// RSS and CPU-seconds, the replicas' CPU per beat, and the takeover times.
const QUICK = process.env.BENCH_QUICK === '1';
/** Another build's bundle to run as the replicas (a baseline: the gateway bundle an older commit's test/build-gateway.ts makes); the source as it is now when unset. */
const GATEWAY = process.env.BENCH_GATEWAY;
/** A folder each replica's log is written into at the end, named by the replica. */
const LOGS = process.env.BENCH_LOGS;
const MACHINES = Number(process.env.BENCH_MACHINES ?? (QUICK ? 10_000 : 100_000));
const HEARTBEAT_S = 10;
const STOPPED_EVERY = 100;
const TICK_MS = 100;
/** After the stopped machines stop: the kill, the freeze, the NATS restart, and the end. */
const KILL_AT_S = 20;
const FREEZE_AT_S = 45;
const FREEZE_S = 20;
const NATS_RESTART_AT_S = 100;
const NATS_DOWN_MS = 2_000;
const END_AT_S = QUICK ? 130 : 190;
const LATE_MS = 1.5 * HEARTBEAT_S * 1000;
const SILENT_MS = 6 * HEARTBEAT_S * 1000;

const NAMES = { prefix: 'bd-', digits: 6 };
const name = (i: number) => machineName(NAMES, i);
/** How long the histories of the stopped machines may take to read after the run. */
const HISTORY_READ_MS = 300_000;
const stops = (machine: string) => Number(machine.slice(3)) % STOPPED_EVERY === 0;

let phase = 'warm-up';

interface Sample {
  replica: string;
  at: number;
  /** What was going on: warm-up, steady, kill, freeze, nats, end. */
  phase: string;
  falselyNotUp: number;
  up: number;
  seq: number;
  /** The stopped machines shown SILENT, and those shown UP or LATE. */
  stoppedSilent: Set<string>;
  stoppedNotSilent: Set<string>;
  lagS: number | undefined;
}

async function sample(g: ChildGateway): Promise<Sample | undefined> {
  try {
    const response = await fetch(g.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: '{ status { seq machines { name state } } }' }),
      signal: AbortSignal.timeout(5_000),
    });
    const { data } = (await response.json()) as { data?: { status: { seq: number; machines: { name: string; state: string }[] } } };
    if (!data) return undefined;
    let falsely = 0;
    let up = 0;
    const stoppedSilent = new Set<string>();
    const stoppedNotSilent = new Set<string>();
    for (const m of data.status.machines) {
      if (m.state === 'UP') up++;
      else if (!stops(m.name)) falsely++;
      if (stops(m.name)) (m.state === 'SILENT' ? stoppedSilent : stoppedNotSilent).add(m.name);
    }
    return {
      replica: g.replica,
      at: Date.now(),
      phase,
      falselyNotUp: falsely,
      up,
      seq: data.status.seq,
      stoppedSilent,
      stoppedNotSilent,
      lagS: await metric(g, 'mesh_news_lag_seconds'),
    };
  } catch (error) {
    console.error(`[badday] reading ${g.replica}: ${String(error)}`);
    return undefined;
  }
}

export async function run(): Promise<string> {
  if (!GATEWAY) bundledChildGateway();
  const spawnReplica = (env: Record<string, string | undefined>) => spawnGateway(env, 60_000, undefined, GATEWAY);
  const lines: string[] = [];
  const log = (line: string) => {
    lines.push(line);
    console.error(`[badday] ${line}`);
  };
  log(
    `machine: ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const world = await startBadDayWorld('badday', HEARTBEAT_S);
  const { env, nats } = world;
  const gateways: ChildGateway[] = [];
  // Two threads past 20,000 machines: 10,000 JSON beats a second is most of a core.
  const mesh = startMesh({
    ...NAMES,
    natsUrl: nats.url,
    subjects: env.MESH_SUBJECTS,
    heartbeatS: HEARTBEAT_S,
    tickMs: TICK_MS,
    machines: MACHINES,
    stoppedEvery: STOPPED_EVERY,
    threads: MACHINES > 20_000 ? 2 : 1,
  });
  const use = new ReplicaUse();
  const samples: Sample[] = [];
  let sampling = true;
  try {
    gateways.push(await spawnReplica(env), await spawnReplica(env));
    const reading = (async () => {
      while (sampling) {
        const started = Date.now();
        const read = await Promise.all(gateways.filter(alive).map(sample));
        for (const s of read) if (s) samples.push(s);
        use.read(gateways);
        await sleep(Math.max(0, 1_000 - (Date.now() - started)));
      }
    })();

    // Warm up: every machine heard, all UP, on both replicas.
    const warm = Date.now();
    for (;;) {
      const counts = gateways.map((g) => samples.findLast((s) => s.replica === g.replica)?.up);
      if (counts.every((c) => c === MACHINES)) break;
      if (Date.now() - warm > 180_000) throw new Error(`not every machine UP within 180 s: ${counts.join(', ')}`);
      await sleep(1_000);
    }
    log(`warm: ${MACHINES} machines UP on both replicas after ${((Date.now() - warm) / 1000).toFixed(0)} s`);
    const falseBefore = samples.length;
    // CPU per beat from here to the end: every replica's CPU-seconds over the beats the mesh sent meanwhile.
    use.read(gateways);
    const cpuAtWarm = use.cpuTotal();
    const sentAtWarm = mesh.sent();

    mesh.stop();
    phase = 'steady';
    const t0 = Date.now();
    const at = (s: number) => sleep(Math.max(0, t0 + s * 1000 - Date.now()));
    log(`stopped every ${STOPPED_EVERY}th machine (${MACHINES / STOPPED_EVERY})`);

    await at(KILL_AT_S);
    const killed = gateways.find(serving)!;
    phase = 'kill';
    const killedAt = Date.now();
    await killed.kill('SIGKILL');
    // Timed while the replacement starts: at 100,000 machines its start (a re-read of the news) outlasts the window.
    const taking = anotherServes(gateways, killed, killedAt, 10_000);
    const spawnedAt = Date.now();
    gateways.push(await spawnReplica(env));
    // Ready once its hearing is rebuilt from the news stream: what a rolling upgrade waits for.
    log(`the replacement started and was ready after ${Date.now() - spawnedAt} ms`);
    const takeoverMs = await taking;
    const survivor = gateways.find((g) => g !== killed && alive(g) && g.output().includes(TOOK_LEASE));
    log(`SIGKILL of the serving replica: another served after ${takeoverMs} ms (${survivor ? 'survivor' : 'see logs'})`);

    await at(FREEZE_AT_S);
    const frozen = gateways.find(serving)!;
    phase = 'freeze';
    frozen.child.kill('SIGSTOP');
    const frozenAt = Date.now();
    const freezeTakeoverMs = await anotherServes(gateways, frozen, frozenAt, 20_000);
    log(`SIGSTOP of the serving replica: another served after ${freezeTakeoverMs} ms`);
    await at(FREEZE_AT_S + FREEZE_S);
    frozen.child.kill('SIGCONT');
    log('SIGCONT');

    await at(NATS_RESTART_AT_S);
    phase = 'nats-restart';
    await nats.restart({ downMs: NATS_DOWN_MS });
    log(`NATS server restarted (down ${NATS_DOWN_MS} ms)`);

    await at(END_AT_S);
    sampling = false;
    await reading;

    use.read(gateways);
    const cpuS = use.cpuTotal() - cpuAtWarm;
    const beats = mesh.sent() - sentAtWarm;

    // How late stopped machines were shown, from their history (every composition).
    const answering = gateways.find(alive)!;
    const stoppedRead: string[] = [];
    for (let i = 0; i < MACHINES; i += STOPPED_EVERY * Math.max(1, Math.floor(MACHINES / STOPPED_EVERY / 50))) stoppedRead.push(name(i));
    const { lateBy, silentBy, falseUpInHistory } = await stoppedBoundaries(answering, stoppedRead, { lateMs: LATE_MS, silentMs: SILENT_MS }, HISTORY_READ_MS);
    // ...and in the samples: a stopped machine shown UP or LATE at a seq after one that showed it SILENT, on any replica.
    const silentSince = new Map<string, Sample>();
    let falseUpSamples = 0;
    const falseUpSeen = new Set<string>();
    for (const s of [...samples].sort((x, y) => x.seq - y.seq)) {
      for (const m of s.stoppedNotSilent) {
        const silent = silentSince.get(m);
        if (!silent || silent.seq >= s.seq) continue;
        falseUpSamples++;
        // Where to look in the replicas' logs (BENCH_LOGS): the first sample of each replica and seq that showed it.
        const where = `${s.replica}@${s.seq}`;
        if (!falseUpSeen.has(where) && falseUpSeen.size < 10) {
          falseUpSeen.add(where);
          log(
            `false UP/LATE after SILENT: ${m} not SILENT on ${s.replica} at seq ${s.seq} (${s.phase}, ${new Date(s.at).toISOString()}), SILENT on ${silent.replica} at seq ${silent.seq} (${new Date(silent.at).toISOString()})`,
          );
        }
      }
      for (const m of s.stoppedSilent) if (!silentSince.has(m)) silentSince.set(m, s);
    }
    const after = samples.slice(falseBefore);
    const falseMachineSeconds = after.reduce((n, s) => n + s.falselyNotUp, 0);
    const byPhase = new Map<string, number>();
    for (const s of after) byPhase.set(s.phase, (byPhase.get(s.phase) ?? 0) + s.falselyNotUp);
    const lags = after.map((s) => s.lagS).filter((x): x is number => x !== undefined);
    const laggiest = after.reduce<Sample | undefined>((top, s) => ((s.lagS ?? -1) > (top?.lagS ?? -1) ? s : top), undefined);
    log(
      `load after: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    return [
      ...lines,
      '',
      `| figure | value | goal |`,
      `|---|---|---|`,
      `| machines, beats a second | ${MACHINES}, ${MACHINES / HEARTBEAT_S} | 100,000, 10,000 |`,
      `| samples read (replica-seconds) | ${after.length} | |`,
      `| false LATE/SILENT machine-seconds | ${falseMachineSeconds} (${[...byPhase].map(([p, n]) => `${p} ${n}`).join(', ')}) | 0 |`,
      `| false UP/LATE after SILENT: machine-samples, changes in the histories read | ${falseUpSamples}, ${falseUpInHistory} | 0 |`,
      `| stopped machines shown LATE past the boundary, p50 / max (ms) | ${quantile(lateBy, 0.5)} / ${Math.max(...lateBy)} (${lateBy.length} read) | ≤ 1,000 |`,
      `| stopped machines shown SILENT past the boundary, p50 / max (ms) | ${quantile(silentBy, 0.5)} / ${Math.max(...silentBy)} (${silentBy.length} read) | ≤ 1,000 |`,
      `| news lag p50 / p99 / max (s) | ${quantile(lags, 0.5)} / ${quantile(lags, 0.99)} / ${Math.max(...lags)} (${laggiest ? `${laggiest.replica}, ${laggiest.phase}` : '-'}) | |`,
      `| RSS max per replica (MB) | ${use.rssCell()} | < 1,024 |`,
      `| CPU-seconds per replica, the whole run | ${use.cpuCell()} | |`,
      `| replicas' CPU per beat sent, warm to end | ${((cpuS * 1e6) / beats).toFixed(0)} µs (${cpuS.toFixed(1)} CPU-s, ${beats} beats) | half of issue 37's first figure |`,
      `| takeover after SIGKILL / SIGSTOP (ms) | ${takeoverMs} / ${freezeTakeoverMs} | < 5,000 |`,
    ].join('\n');
  } finally {
    sampling = false;
    await mesh.end().catch(() => undefined);
    for (const g of gateways) {
      g.child.kill('SIGCONT');
      await g.kill('SIGKILL');
      if (LOGS) writeFileSync(join(LOGS, `${g.replica}.log`), g.output());
    }
    await world.end();
  }
}

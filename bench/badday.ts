import { randomBytes } from 'node:crypto';
import { cpus, loadavg, totalmem } from 'node:os';
import { type ChildGateway, spawnGateway } from '../test/fixtures/child.js';
import { startNatsServer } from '../test/fixtures/nats-server.js';
import { alive, metric, quantile, rssOf, serving, sleep, startMesh, TOOK_LEASE } from './bad-day-kit.js';
import { bundledChildGateway } from './compiled.js';
import { ADMIN_URL, admin } from './databases.js';

// A bad day at scale (issue 19): MACHINES machines beating every 10 s (10,000 beats a second at
// 100,000), two replicas on one PostgreSQL and a NATS server of the bench's own; the serving
// replica SIGKILLed (a replacement started), the serving one then SIGSTOPped for 20 s, then the
// NATS server restarted. Every second each live replica's status is read. Reports false LATE /
// SILENT machine-seconds (machines that kept beating shown not UP), false UP (a stopped machine
// shown UP or LATE after it was shown SILENT), how late machines that really
// stopped were shown LATE and SILENT past their boundaries, the news lag p50/p99, each replica's
// RSS, and the takeover times.
const QUICK = process.env.BENCH_QUICK === '1';
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

const name = (i: number) => `bd-${String(i).padStart(6, '0')}`;
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
  bundledChildGateway();
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
  const database = `bench_badday_${randomBytes(4).toString('hex')}`;
  await admin(`create database "${database}"`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${database}`;
  const nats = await startNatsServer();
  const env = {
    DATABASE_URL: url.toString(),
    NATS_URL: nats.url,
    MESH_CONTROLLER: `badday_${randomBytes(3).toString('hex')}`,
    MESH_SUBJECTS: `badday_${randomBytes(3).toString('hex')}`,
    MESH_HEARTBEAT_S: String(HEARTBEAT_S),
    PORT: '0',
  };
  const gateways: ChildGateway[] = [];
  // Two threads past 20,000 machines: 10,000 JSON beats a second is most of a core.
  const mesh = startMesh({
    natsUrl: nats.url,
    subjects: env.MESH_SUBJECTS,
    heartbeatS: HEARTBEAT_S,
    tickMs: TICK_MS,
    machines: MACHINES,
    stoppedEvery: STOPPED_EVERY,
    threads: MACHINES > 20_000 ? 2 : 1,
  });
  const rss = new Map<string, number>();
  const samples: Sample[] = [];
  let sampling = true;
  try {
    gateways.push(await spawnGateway(env), await spawnGateway(env));
    const reading = (async () => {
      while (sampling) {
        const started = Date.now();
        const read = await Promise.all(gateways.filter(alive).map(sample));
        for (const s of read) if (s) samples.push(s);
        for (const g of gateways.filter(alive)) {
          const bytes = rssOf(g.pid);
          if (bytes) rss.set(g.replica, Math.max(rss.get(g.replica) ?? 0, bytes));
        }
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
    gateways.push(await spawnGateway(env));
    const survivor = gateways.find((g) => g !== killed && alive(g) && g.output().includes(TOOK_LEASE));
    let takeoverMs: number | undefined;
    for (let i = 0; i < 200 && takeoverMs === undefined; i++) {
      const taker = gateways.find((g) => g !== killed && serving(g));
      if (taker) takeoverMs = Date.now() - killedAt;
      else await sleep(50);
    }
    log(`SIGKILL of the serving replica: another served after ${takeoverMs} ms (${survivor ? 'survivor' : 'see logs'})`);

    await at(FREEZE_AT_S);
    const frozen = gateways.find(serving)!;
    phase = 'freeze';
    frozen.child.kill('SIGSTOP');
    const frozenAt = Date.now();
    let freezeTakeoverMs: number | undefined;
    for (let i = 0; i < 400 && freezeTakeoverMs === undefined; i++) {
      if (gateways.some((g) => g !== frozen && serving(g))) freezeTakeoverMs = Date.now() - frozenAt;
      else await sleep(50);
    }
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

    // How late stopped machines were shown, from their history (every composition).
    const answering = gateways.find(alive)!;
    const lateBy: number[] = [];
    let falseUpInHistory = 0;
    const silentBy: number[] = [];
    const HISTORY = 'query($name: String!) { machineHistory(name: $name) { ... on QueryMachineHistorySuccess { data { at state lastHeardAt } } } }';
    for (let i = 0; i < MACHINES; i += STOPPED_EVERY * Math.max(1, Math.floor(MACHINES / STOPPED_EVERY / 50))) {
      const { data } = await answering.gql(HISTORY, { name: name(i) });
      const changes: { at: string; state: string | null; lastHeardAt: string | null }[] = data?.machineHistory?.data ?? [];
      const { data: m } = await answering.gql('query($n: String!) { machine(name: $n) { lastHeardAt } }', { n: name(i) });
      const last = Date.parse(m.machine.lastHeardAt);
      const late = changes.find((c) => c.state === 'LATE');
      const silent = changes.find((c) => c.state === 'SILENT');
      if (late) lateBy.push(Date.parse(late.at) - last - LATE_MS);
      if (silent) silentBy.push(Date.parse(silent.at) - last - SILENT_MS);
      // A false UP: shown UP or LATE in a composition after one showed it SILENT (it never beat again).
      const silentAt = changes.findIndex((c) => c.state === 'SILENT');
      if (silentAt >= 0) falseUpInHistory += changes.slice(silentAt + 1).filter((c) => c.state !== null && c.state !== 'SILENT').length;
    }
    // ...and in the samples: a stopped machine shown UP or LATE at a seq after one that showed it SILENT, on any replica.
    const silentSince = new Map<string, number>();
    let falseUpSamples = 0;
    for (const s of [...samples].sort((x, y) => x.seq - y.seq)) {
      for (const m of s.stoppedNotSilent) if ((silentSince.get(m) ?? Number.POSITIVE_INFINITY) < s.seq) falseUpSamples++;
      for (const m of s.stoppedSilent) if (!silentSince.has(m)) silentSince.set(m, s.seq);
    }
    const after = samples.slice(falseBefore);
    const falseMachineSeconds = after.reduce((n, s) => n + s.falselyNotUp, 0);
    const byPhase = new Map<string, number>();
    for (const s of after) byPhase.set(s.phase, (byPhase.get(s.phase) ?? 0) + s.falselyNotUp);
    const lags = after.map((s) => s.lagS).filter((x): x is number => x !== undefined);
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
      `| news lag p50 / p99 / max (s) | ${quantile(lags, 0.5)} / ${quantile(lags, 0.99)} / ${Math.max(...lags)} | |`,
      `| RSS max per replica (MB) | ${[...rss].map(([r, b]) => `${r}: ${Math.round(b / 2 ** 20)}`).join(', ')} | < 1,024 |`,
      `| takeover after SIGKILL / SIGSTOP (ms) | ${takeoverMs} / ${freezeTakeoverMs} | < 5,000 |`,
    ].join('\n');
  } finally {
    sampling = false;
    await mesh.end().catch(() => undefined);
    for (const g of gateways) {
      g.child.kill('SIGCONT');
      await g.kill('SIGKILL');
    }
    await nats.stop();
    await admin(`drop database if exists "${database}" with (force)`).catch(() => undefined);
  }
}

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpus, loadavg, totalmem } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { connect } from '@nats-io/transport-node';
import { sql } from 'kysely';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { startGateway } from '../src/gateway.js';
import { CONTROLLER_VERBS } from '../src/services/controller/verbs.js';
import { recordHeartbeats } from '../src/services/machines/machines.js';
import { compiledCatalogue } from '../src/services/seats/catalogue.js';
import { listHoldings } from '../src/services/seats/holdings.js';
import { seedSeats } from '../src/services/seats/seeding.js';
import { type CompositionSources, compose, composeFully, composeIncrementally } from '../src/services/status/composing/compose.js';
import { nextCrossing } from '../src/services/status/composing/crossing.js';
import { COMPOSE_MIN_GAP_MS } from '../src/services/status/composing/scheduler.js';
import { INCREMENTAL_TRIGGERS } from '../src/services/status/composing/step.js';
import type { Composition } from '../src/services/status/composition.js';
import { diffCompositions } from '../src/services/status/delta/algebra.js';
import { encodeComposition } from '../src/services/status/replicating/encode.js';
import { openStore } from '../src/store/db.js';
import { migrateToLatest } from '../src/store/migrate.js';
import { deleteControllerStreams } from './streams.js';

/** A mesh to bench: machines over SITES sites each running two modules, seats, recorded holdings per machine. */
interface MeshSize {
  machines: number;
  seats: number;
  /** Holdings on record per machine (each machine's `broker` also claims `queue`, a derived holding). */
  recordedPerMachine: 1 | 2;
  compositions: number;
  newsRate: number;
  newsSeconds: number;
  /** Compare each batch's incremental composition with a full one at the same instant (tens of seconds each at a million). */
  compareEach?: boolean;
  /** Run a gateway on the seeded mesh under news afterwards. */
  underNews?: boolean;
}

// The mesh DESIGN.md's issue sizes the composer for.
export const MESH_10K: MeshSize = {
  machines: 10_000,
  seats: 2_000,
  recordedPerMachine: 2,
  compositions: 21,
  newsRate: Number(process.env.BENCH_NEWS_RATE ?? 25_000),
  newsSeconds: Number(process.env.BENCH_NEWS_SECONDS ?? 6),
};
// Issue 14's mesh: 100,000 machines, 20,000 seats, 200,000 holdings (100,000 on record, 100,000
// derived), every machine heartbeating every 10 s (10,000 a second).
const MESH_100K: MeshSize = {
  machines: 100_000,
  seats: 20_000,
  recordedPerMachine: 1,
  compositions: 6,
  newsRate: Number(process.env.BENCH_NEWS_RATE ?? 10_000),
  newsSeconds: Number(process.env.BENCH_NEWS_SECONDS ?? 30),
};
// Issue 37's mesh: a million machines, each heard every 60 s. Only the composing is measured here:
// the whole gateway under a million machines' news is `npm run bench -- million`.
const MESH_1M: MeshSize = {
  machines: 1_000_000,
  seats: 20_000,
  recordedPerMachine: 1,
  compositions: 2,
  newsRate: 16_700,
  newsSeconds: 0,
  compareEach: false,
  underNews: false,
};
const SITES = 20;
/**
 * The heartbeat the compositions judge by. At 10 s, the seeding's last-heard instants (spread over
 * 200 s) make about 5,000 machines cross into LATE or SILENT each second of the run, read again by
 * every incremental composition. BENCH_COMPOSE_STEADY=1 judges at an hour: a mesh whose machines
 * keep beating, where no machine crosses during the run.
 */
const HEARTBEAT_SECONDS = process.env.BENCH_COMPOSE_STEADY === '1' ? 3600 : 10;

const ADMIN_URL = process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const ms = (n: number) => `${n.toFixed(1)} ms`;

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Publishes `rate` heartbeats a second for `seconds` across the machines, from its own process. */
async function publisher(root: string, rate: number, seconds: number, machines: number): Promise<void> {
  const nc = await connect({ servers: NATS_URL });
  const slice = 10;
  const perSlice = Math.ceil((rate * slice) / 1000);
  const total = rate * seconds;
  const start = performance.now();
  let sent = 0;
  let i = 0;
  while (sent < total) {
    for (let k = 0; k < perSlice && sent < total; k++, sent++, i = (i + 1) % machines) {
      const machine = `m-${i}`;
      nc.publish(
        `${root}.news.machine.${machine}`,
        JSON.stringify({ kind: 'heartbeat', site: `site-${i % SITES}`, modules: ['broker', 'web'], claims: { broker: ['queue'] } }),
      );
    }
    const wait = start + (sent / rate) * 1000 - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    else await nc.flush();
  }
  await nc.flush();
  const took = (performance.now() - start) / 1000;
  process.stdout.write(`${JSON.stringify({ sent, seconds: took })}\n`);
  await nc.close();
}

/** Seeds the mesh in a few statements: machines over SITES sites each running two modules, seats, holdings on record, a few open plans. */
export async function seed(db: Awaited<ReturnType<typeof openStore>>, size: MeshSize = MESH_10K) {
  const { machines: MACHINES, seats: SEATS } = size;
  const HOLDINGS = MACHINES * size.recordedPerMachine;
  await seedSeats(db, compiledCatalogue('bench-controller', CONTROLLER_VERBS));
  await sql`insert into machine (name, site, first_heard_at, last_heard_at, heartbeats)
            select 'm-' || i, 'site-' || (i % ${SITES}), now() - interval '1 day', now() - (i % 200) * interval '1 second', 100
              from generate_series(0, ${MACHINES - 1}) i`.execute(db);
  await sql`insert into assignment (machine, module, running, claims)
            select 'm-' || i, m, true, case when m = 'broker' then '["queue"]'::jsonb else '[]'::jsonb end
              from generate_series(0, ${MACHINES - 1}) i, unnest(array['broker', 'web']) m`.execute(db);
  await sql`insert into seat (name, scope, delivers, decided, replicated)
            select 'seat-' || i, 'site', 'bench', 'bench', true from generate_series(0, ${SEATS - 1}) i`.execute(db);
  // Each machine's two modules hold one seat each: HOLDINGS recorded holdings, HOLDINGS / SEATS holders a seat.
  await sql`insert into seat_holding (seat, machine, module, scope)
            select 'seat-' || ((i * ${size.recordedPerMachine} + k) % ${SEATS}), 'm-' || i, case when k = 0 then 'broker' else 'web' end, 'site'
              from generate_series(0, ${MACHINES - 1}) i, generate_series(0, ${HOLDINGS / MACHINES - 1}) k`.execute(db);
  await sql`insert into plan (id, seat, build, tiers, state, opened_at)
            select 'plan-' || i, 'seat-' || i, 'b-' || i, '[["m-1","m-2"],["m-3"]]'::jsonb, 'OPEN', now() from generate_series(1, 5) i`.execute(db);
  await sql`analyze`.execute(db);
}

export const run = (): Promise<string> => runAt(MESH_10K);
export const run100k = (): Promise<string> => runAt(MESH_100K);
export const run1m = (): Promise<string> => runAt(MESH_1M);

/** Incremental compositions after a batch of heartbeats over `touched` machines, against the full one at the same instant. */
async function incrementalFigures(db: Awaited<ReturnType<typeof openStore>>, size: MeshSize, sources: CompositionSources, log: (line: string) => void) {
  const input = (seq: number, now: Date) => ({ seq, controller: 'bench-controller', trigger: 'bench', heartbeatSeconds: HEARTBEAT_SECONDS, sources, now });
  const first = performance.now();
  const { view } = await composeFully(db, input(1, new Date()));
  log(`full composition (the view an incremental one starts from): ${ms(performance.now() - first)}`);
  let previous = (await composeIncrementally(db, view, [], input(1, new Date()))) as Composition;
  for (const touched of [1, 100, 2_500, 10_000].filter((n) => n <= size.machines)) {
    const took: number[] = [];
    const deltas: number[] = [];
    for (let r = 0; r < 5; r++) {
      const at = new Date();
      // Every tenth machine of the batch changes its modules (and so its derived holding): the rest only heartbeat.
      await recordHeartbeats(
        db,
        Array.from({ length: touched }, (_, k) => {
          const i = (r * 7919 + k * 37) % size.machines;
          const changes = k % 10 === 0 && r % 2 === 0;
          return {
            machine: `m-${i}`,
            site: `site-${i % SITES}`,
            modules: changes ? ['web'] : ['broker', 'web'],
            claims: changes ? ({} as Record<string, string[]>) : { broker: ['queue'] },
            at,
          };
        }),
      );
      const names = Array.from({ length: touched }, (_, k) => `m-${(r * 7919 + k * 37) % size.machines}`);
      const now = new Date();
      const wall = performance.now();
      const incremental = await composeIncrementally(db, view, names, input(r + 2, now));
      took.push(performance.now() - wall);
      // The delta a replica publishes and a subscriber is sent: unchanged machines are skipped by identity.
      const diffing = performance.now();
      diffCompositions(previous, incremental);
      deltas.push(performance.now() - diffing);
      previous = incremental;
      if (r === 4 && size.compareEach === false && touched > 1) {
        log(
          `incremental after ${touched} machine(s) heard: median ${ms(median(took))} (min ${ms(Math.min(...took))}); its delta: median ${ms(median(deltas))}`,
        );
      } else if (r === 4) {
        const full = await compose(db, input(r + 2, now));
        const strip = (c: typeof full) => JSON.stringify({ ...c, seq: 0, composedAt: '', tookMs: 0, trigger: '' });
        log(
          `incremental after ${touched} machine(s) heard: median ${ms(median(took))} (min ${ms(Math.min(...took))}); its delta: median ${ms(median(deltas))}; equal to the full composition: ${strip(incremental) === strip(full)}`,
        );
      }
    }
  }
  const crossing = performance.now();
  const c = await compose(db, input(99, new Date()));
  const composed = performance.now();
  nextCrossing(c, 10);
  const crossed = performance.now();
  JSON.stringify(c);
  log(
    `around each composition: the LATE/SILENT crossing timer ${ms(crossed - composed)}; JSON.stringify of the whole composition ${ms(performance.now() - crossed)} (full compose ${ms(composed - crossing)})`,
  );
}

async function runAt(size: MeshSize): Promise<string> {
  const { machines: MACHINES, seats: SEATS, compositions: COMPOSITIONS } = size;
  const HOLDINGS = MACHINES * size.recordedPerMachine;
  const NEWS_RATE = size.newsRate;
  const NEWS_SECONDS = size.newsSeconds;
  const name = `bench_compose_${randomBytes(4).toString('hex')}`;
  await admin((c) => c.query(`create database "${name}"`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const controller = `bench_${randomBytes(3).toString('hex')}`;
  const lines: string[] = [];
  const log = (line: string) => {
    lines.push(line);
    console.error(line);
  };
  try {
    let statements = 0;
    const db = await openStore({ databaseUrl: url.toString(), dataDir: '.mesh', onQuery: () => statements++ });
    await migrateToLatest(db);
    const seeding = performance.now();
    await seed(db, size);
    log(
      `seeded ${MACHINES} machines (${SITES} sites, 2 modules each), ${SEATS} seats, ${HOLDINGS} holdings on record and ${MACHINES} derived, in ${ms(performance.now() - seeding)}`,
    );

    const sources: CompositionSources = { callsRunning: () => 0, handActsSince: () => ({ count: 0, repeatedCauses: [] }) };
    const took: number[] = [];
    const walls: number[] = [];
    const encodes: number[] = [];
    const perComposition: number[] = [];
    let jsonBytes = 0;
    let parts = 0;
    for (let i = 0; i < COMPOSITIONS; i++) {
      statements = 0;
      const wall = performance.now();
      const composition = await compose(db, { seq: i + 1, controller: 'bench-controller', trigger: 'bench', heartbeatSeconds: 10, sources });
      const composed = performance.now();
      const encoded = await encodeComposition(composition, 1024 * 1024);
      if (i === 0) continue; // warm-up: plans cached, pool connected
      walls.push(composed - wall);
      encodes.push(performance.now() - composed);
      took.push(composition.tookMs);
      perComposition.push(statements);
      jsonBytes = Buffer.byteLength(JSON.stringify(composition));
      parts = encoded.length;
    }
    await incrementalFigures(db, size, sources, log);
    // Where a composition's time goes: the holdings read (listHoldings, 30,000 rows) on its own.
    const holdingsWall: number[] = [];
    const holdingsCpu: number[] = [];
    for (let i = 0; i < 7; i++) {
      const cpu = process.cpuUsage();
      const wall = performance.now();
      await listHoldings(db);
      holdingsWall.push(performance.now() - wall);
      const used = process.cpuUsage(cpu);
      holdingsCpu.push((used.user + used.system) / 1000);
    }
    await db.destroy();
    log(`compose (${COMPOSITIONS - 1} runs after a warm-up): median tookMs ${ms(median(took))}, min ${ms(Math.min(...took))}, max ${ms(Math.max(...took))}`);
    log(`of which listHoldings alone: median ${ms(median(holdingsWall))} wall, ${ms(median(holdingsCpu))} of Node CPU (row parsing and mapping)`);
    log(`SQL statements per composition: ${[...new Set(perComposition)].join(', ')}`);
    log(
      `composition JSON ${(jsonBytes / 1024 / 1024).toFixed(2)} MiB; framed for NATS (gzip, 1 MiB max_payload) in a median ${ms(median(encodes))} as ${parts} message(s)`,
    );

    if (size.underNews === false) return finish(lines);
    // News while composing: one gateway (serving, so composing) on this database, heartbeats from another process.
    const subjects = `bench_${randomBytes(3).toString('hex')}`;
    const config = loadConfig({ DATABASE_URL: url.toString(), NATS_URL, MESH_CONTROLLER: controller, MESH_SUBJECTS: subjects, PORT: '0', LOG_LEVEL: 'warn' });
    const gateway = await startGateway(config, { logger: pino({ level: 'warn' }) });
    try {
      const deadline = Date.now() + 30_000;
      while (!gateway.mesh.status.current() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const c0 = gateway.composer.stats.compositions;
      const { full: full0, incremental: incremental0 } = gateway.composer.stats;
      const n0 = gateway.news.stats.ingested;
      const seqs: { at: number; seq: number; tookMs: number; incremental: boolean }[] = [];
      const off = gateway.mesh.status.subscribe((c) =>
        seqs.push({ at: Date.now(), seq: c.seq, tookMs: c.tookMs, incremental: c.trigger.split(',').every((t) => INCREMENTAL_TRIGGERS.has(t)) }),
      );
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', fileURLToPath(import.meta.url), '--publisher', subjects, String(NEWS_RATE), String(NEWS_SECONDS), String(MACHINES)],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      let firstAt = 0;
      let lastAt = 0;
      const started = Date.now();
      const sampler = setInterval(() => {
        const got = gateway.news.stats.ingested - n0;
        if (got > 0 && !firstAt) firstAt = Date.now();
      }, 5);
      await new Promise((resolve) => child.once('exit', resolve));
      const published = JSON.parse(out.trim().split('\n').pop()!) as { sent: number; seconds: number };
      const drainDeadline = Date.now() + 120_000;
      while (gateway.news.stats.ingested + gateway.news.stats.poison - n0 < published.sent && Date.now() < drainDeadline) {
        await new Promise((r) => setTimeout(r, 5));
      }
      lastAt = Date.now();
      clearInterval(sampler);
      await new Promise((r) => setTimeout(r, 2 * COMPOSE_MIN_GAP_MS + 1000));
      off();
      const ingested = gateway.news.stats.ingested - n0;
      const seconds = (lastAt - (firstAt || started)) / 1000;
      const compositions = gateway.composer.stats.compositions - c0;
      const window = (Date.now() - started) / 1000;
      let maxPerSecond = 0;
      for (const s of seqs) maxPerSecond = Math.max(maxPerSecond, seqs.filter((t) => t.at >= s.at && t.at < s.at + 1000).length);
      log(
        `news: offered ${published.sent} heartbeats at ${Math.round(published.sent / published.seconds)}/s; ingested ${ingested} (poison ${gateway.news.stats.poison}, redelivered ${gateway.news.stats.redelivered}, malformed ${gateway.news.stats.malformed}) in ${seconds.toFixed(2)} s = ${Math.round(ingested / seconds)}/s in ${gateway.news.stats.batches} batches`,
      );
      const incrementals = seqs.filter((t) => t.incremental).map((t) => t.tookMs);
      const fulls = seqs.filter((t) => !t.incremental).map((t) => t.tookMs);
      log(
        `compositions meanwhile: ${compositions} in ${window.toFixed(1)} s (${gateway.composer.stats.full - full0} full, ${gateway.composer.stats.incremental - incremental0} incremental), at most ${maxPerSecond} in any second; median tookMs ${ms(incrementals.length ? median(incrementals) : 0)} incremental, ${ms(fulls.length ? median(fulls) : 0)} full; gateway RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB (bench and gateway in one process)`,
      );
    } finally {
      await gateway.stop();
    }
  } finally {
    await admin((c) => c.query(`drop database if exists "${name}" with (force)`)).catch(() => undefined);
    await deleteControllerStreams(NATS_URL, controller);
  }
  return finish(lines);
}

/** The report: the machine and the load average at the end, then the figures. */
function finish(lines: readonly string[]): string {
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}; load average at the end ${loadavg()[0]!.toFixed(2)}`;
  return [`machine: ${machine}`, ...lines].join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv[2] === '--publisher') {
    await publisher(process.argv[3]!, Number(process.argv[4]), Number(process.argv[5]), Number(process.argv[6]));
  } else {
    console.log(await run());
  }
}

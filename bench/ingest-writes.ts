import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { startGateway } from '../src/gateway.js';
import { deleteControllerStreams } from './streams.js';

// Issue 37: how many PostgreSQL rows a steady mesh costs a second. BENCH_MACHINES machines (20,000)
// beat every BENCH_HEARTBEAT_S (10 s) with the same site and modules, into one gateway on a database
// of its own; once every machine beat twice, the rows inserted, updated and deleted in that database
// (pg_stat_user_tables) are counted over BENCH_MEASURE_S (60 s).
const MACHINES = Number(process.env.BENCH_MACHINES ?? 20_000);
const HEARTBEAT_S = Number(process.env.BENCH_HEARTBEAT_S ?? 10);
const MEASURE_S = Number(process.env.BENCH_MEASURE_S ?? 60);
const SITES = 20;
const ADMIN_URL = process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

/** Rows inserted, updated and deleted so far in the database at `url`, by table (the statistics collector's, read afresh). */
async function rowsWritten(url: string): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ relname: string; n: string }>(
      'select relname, (n_tup_ins + n_tup_upd + n_tup_del)::text as n from pg_stat_user_tables',
    );
    return Object.fromEntries(rows.map((r) => [r.relname, Number(r.n)]));
  } finally {
    await client.end();
  }
}

/** Every machine beats once per HEARTBEAT_S, spread evenly, until `until` (Date.now()). */
async function beat(root: string, until: number): Promise<number> {
  const nc = await connect({ servers: NATS_URL });
  const perMs = MACHINES / (HEARTBEAT_S * 1000);
  const start = performance.now();
  let sent = 0;
  while (Date.now() < until) {
    const due = Math.floor((performance.now() - start) * perMs);
    for (; sent < due; sent++) {
      const i = sent % MACHINES;
      nc.publish(
        `${root}.news.machine.m-${i}`,
        JSON.stringify({ kind: 'heartbeat', site: `site-${i % SITES}`, modules: ['broker', 'web'], claims: { broker: ['queue'] } }),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await nc.flush();
  await nc.close();
  return sent;
}

export async function run(): Promise<string> {
  const name = `bench_writes_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`create database "${name}"`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const controller = `bench_${randomBytes(3).toString('hex')}`;
  const subjects = `bench_${randomBytes(3).toString('hex')}`;
  const lines: string[] = [];
  try {
    const config = loadConfig({
      DATABASE_URL: url.toString(),
      NATS_URL,
      MESH_CONTROLLER: controller,
      MESH_SUBJECTS: subjects,
      MESH_HEARTBEAT_S: String(HEARTBEAT_S),
      PORT: '0',
      LOG_LEVEL: 'warn',
    });
    const gateway = await startGateway(config, { logger: pino({ level: 'warn' }) });
    try {
      const warmS = 2 * HEARTBEAT_S;
      const beating = beat(subjects, Date.now() + (warmS + MEASURE_S) * 1000);
      await new Promise((resolve) => setTimeout(resolve, warmS * 1000));
      const ingested0 = gateway.news.stats.ingested;
      const before = await rowsWritten(url.toString());
      const cpu0 = process.cpuUsage();
      await new Promise((resolve) => setTimeout(resolve, MEASURE_S * 1000));
      const after = await rowsWritten(url.toString());
      const cpu = process.cpuUsage(cpu0);
      const beats = gateway.news.stats.ingested - ingested0;
      const sent = await beating;
      const tables = Object.keys(after)
        .map((t) => [t, (after[t]! - (before[t] ?? 0)) / MEASURE_S] as const)
        .filter(([, perS]) => perS > 0)
        .sort((a, b) => b[1] - a[1]);
      const total = tables.reduce((sum, [, perS]) => sum + perS, 0);
      lines.push(
        `${MACHINES} machines beating every ${HEARTBEAT_S} s (${Math.round(MACHINES / HEARTBEAT_S)} beats/s; ${sent} sent), steady state over ${MEASURE_S} s after ${warmS} s:`,
        `beats ingested ${Math.round(beats / MEASURE_S)}/s; PostgreSQL rows written ${total.toFixed(1)}/s (${tables.map(([t, perS]) => `${t} ${perS.toFixed(1)}`).join(', ') || 'none'})`,
        `gateway process CPU ${(((cpu.user + cpu.system) / 1e6 / MEASURE_S) * 100).toFixed(0)}% of a core (publisher in the same process); MESH_CHECKPOINT_S ${(config as { checkpointSeconds?: number }).checkpointSeconds ?? 'none (every beat written)'}`,
      );
    } finally {
      await gateway.stop();
    }
  } finally {
    await admin.query(`drop database if exists "${name}" with (force)`).catch(() => undefined);
    await admin.end();
    await deleteControllerStreams(NATS_URL, controller);
  }
  return [
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}; load average at the end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
    ...lines,
  ].join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) console.log(await run());

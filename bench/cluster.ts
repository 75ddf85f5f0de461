import { randomBytes } from 'node:crypto';
import { cpus, loadavg, totalmem } from 'node:os';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { openStore } from '../src/store/db.js';
import { migrateToLatest } from '../src/store/migrate.js';
import { type ChildGateway, spawnGateway } from '../test/fixtures/child.js';
import { startNatsCluster } from '../test/fixtures/nats-cluster.js';
import { startNatsServer } from '../test/fixtures/nats-server.js';
import { MESH_10K, seed } from './compose.js';
import { ADMIN_URL, admin } from './databases.js';
import { type Clients, startClients } from './fanout.js';

// The clustered path beside the single node, in one run: two gateways per NATS (the serving one
// composes, each fans out to half the subscribers), news through the (replicated) news stream.
const QUICK = process.env.BENCH_QUICK === '1';
const SUBSCRIBERS = QUICK ? 500 : 5_000;
const RUNS = 5;
const CALL_SECONDS = 5;
const CALL_CONCURRENCY = 16;
const PUT_SECONDS = 3;
const TOOK_LEASE = 'took the serving lease';
/** What a dashboard of a large mesh asks: deltas, so a heartbeat is one changed machine, not the whole mesh again. */
const CHANGES = 'subscription { statusChanges { seq baseSeq delta { seq machines { changed { name state lastHeardAt } } } } }';

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

/** One NATS (a single node or the cluster) with its database, two gateways and the subscribers split over them. */
interface Setup {
  name: string;
  nc: NatsConnection;
  gateways: ChildGateway[];
  clients: Clients[];
  subjects: string;
  controller: string;
  stop(): Promise<void>;
}

async function setUp(name: string, natsUrls: [string, string], agentUrl: string, replicas: number, log: (line: string) => void): Promise<Setup> {
  const database = `bench_cluster_${randomBytes(4).toString('hex')}`;
  await admin(`create database "${database}"`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${database}`;
  const db = await openStore({ databaseUrl: url.toString(), dataDir: '.mesh' });
  await migrateToLatest(db);
  await seed(db);
  await db.destroy();
  const controller = `benchcl_${randomBytes(3).toString('hex')}`;
  const subjects = `benchcl_${randomBytes(3).toString('hex')}`;
  const env = {
    DATABASE_URL: url.toString(),
    MESH_CONTROLLER: controller,
    MESH_SUBJECTS: subjects,
    MESH_KV_REPLICAS: String(replicas),
    PORT: '0',
    // An hour between heartbeats: no machine turns LATE during the bench, so every composition is the bench's.
    MESH_HEARTBEAT_S: '3600',
    MESH_WS_SOCKETS_PER_CALLER: '100000',
    MESH_WS_SOCKETS_PER_ADDRESS: '100000',
    MESH_OPS_PER_SECOND: '1000000',
  };
  const gateways: ChildGateway[] = [];
  const clients: Clients[] = [];
  const nc = await connect({ servers: agentUrl });
  const stop = async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    for (const g of gateways) await g.stop();
    await nc.close();
    await admin(`drop database if exists "${database}" with (force)`).catch(() => undefined);
  };
  try {
    // The serving gateway on the first node, the other on the second: compositions cross a route on the cluster.
    const serving = await spawnGateway({ ...env, NATS_URL: natsUrls[0] }, 120_000);
    gateways.push(serving);
    await waitFor(() => serving.output().includes(TOOK_LEASE), 'the serving lease', 30_000);
    gateways.push(await spawnGateway({ ...env, NATS_URL: natsUrls[1] }, 120_000));
    for (const g of gateways) clients.push(await startClients(g.url.replace(/^http/, 'ws'), SUBSCRIBERS / 2, CHANGES));
    log(`${name}: ${MESH_10K.machines} machines seeded, 2 gateways (MESH_KV_REPLICAS=${replicas}), ${SUBSCRIBERS} statusChanges subscribers`);
    return { name, nc, gateways, clients, subjects, controller, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function currentSeq(gateway: ChildGateway): Promise<number> {
  const { data } = await gateway.gql<{ status: { seq: number } }>('{ status { seq } }');
  return data?.status.seq ?? 0;
}

/** One heartbeat in, until every subscriber of both gateways has the composition it made: news → stream → store → compose → NATS → fan-out. */
async function heartbeatToSubscribers(setup: Setup, n: number): Promise<number> {
  const seq = (await currentSeq(setup.gateways[0]!)) + 1;
  const t0 = now();
  setup.nc.publish(`${setup.subjects}.news.machine.m-${n}`, JSON.stringify({ kind: 'heartbeat', site: `site-${n % 20}`, modules: ['broker', 'web'] }));
  const arrivals = await Promise.all(setup.clients.map((c) => c.wait(seq)));
  const got = arrivals.reduce((s, a) => s + a.count, 0);
  if (got !== SUBSCRIBERS) throw new Error(`${setup.name}: only ${got} of ${SUBSCRIBERS} subscribers got composition ${seq}`);
  return Math.max(...arrivals.map((a) => a.last)) - t0;
}

/** NATS verb calls (recordHandAct: the call RUNNING, its hand-act, the call OK) answered per second, CALL_CONCURRENCY at a time. */
async function callsPerSecond(setup: Setup): Promise<{ rate: number; failed: number }> {
  const subject = `${setup.subjects}.seat.${setup.controller}.recordHandAct.bench`;
  const deadline = Date.now() + CALL_SECONDS * 1000;
  let ok = 0;
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CALL_CONCURRENCY }, async (_, w) => {
      for (let i = 0; Date.now() < deadline; i++) {
        const reply = await setup.nc.request(subject, JSON.stringify({ act: 'bench', target: `m-${w}`, why: `bench ${w}/${i}`, cause: 'bench' }), {
          timeout: 10_000,
        });
        if (reply.json<{ ok: boolean }>().ok) ok++;
        else failed++;
      }
    }),
  );
  return { rate: ok / ((performance.now() - started) / 1000), failed };
}

/** Raw KV puts of a call-sized record (1 KiB) per second into a bucket of `replicas`, CALL_CONCURRENCY at a time. */
async function putsPerSecond(nc: NatsConnection, replicas: number): Promise<number> {
  const kvm = new Kvm(nc);
  const name = `bench_puts_${randomBytes(3).toString('hex')}`;
  const kv = await kvm.create(name, { history: 1, replicas, max_bytes: 256 * 1024 * 1024 });
  const body = 'x'.repeat(1024);
  const deadline = Date.now() + PUT_SECONDS * 1000;
  let puts = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CALL_CONCURRENCY }, async (_, w) => {
      for (let i = 0; Date.now() < deadline; i++, puts++) await kv.put(`k${w}.${i % 500}`, body);
    }),
  );
  const rate = puts / ((performance.now() - started) / 1000);
  await kv.destroy();
  return rate;
}

const machineLine = () =>
  `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}; load average at the end ${loadavg()[0]!.toFixed(2)}`;

/** `npm run bench -- cluster`: a single nats-server and a three-node cluster, each private to the bench, side by side. */
export async function run(): Promise<string> {
  const lines: string[] = [];
  const log = (line: string) => {
    lines.push(line);
    console.error(line);
  };
  const [single, cluster] = await Promise.all([startNatsServer(), startNatsCluster(3)]);
  const [n1, n2, n3] = cluster.nodes as [(typeof cluster.nodes)[0], (typeof cluster.nodes)[0], (typeof cluster.nodes)[0]];
  const setups: Setup[] = [];
  try {
    setups.push(await setUp('single node', [single.url, single.url], single.url, 1, log));
    // The news comes in on the third node, so it crosses a route to the stream's leader wherever that is.
    setups.push(await setUp('three-node cluster', [n1.url, n2.url], n3.url, 3, log));
    const runs: number[][] = setups.map(() => []);
    for (let r = 0; r <= RUNS; r++) {
      for (const [i, setup] of setups.entries()) {
        const ms = await heartbeatToSubscribers(setup, r * 7 + i);
        if (r > 0) runs[i]!.push(ms); // the first is a warm-up
        await sleep(1_000);
      }
    }
    const medians = runs.map(median);
    for (const [i, setup] of setups.entries()) {
      log(
        `compose + fan-out, one heartbeat to the last of ${SUBSCRIBERS} subscribers, ${setup.name}: median ${medians[i]!.toFixed(0)} ms (runs ${runs[i]!.map((m) => m.toFixed(0)).join(', ')})`,
      );
    }
    log(`  ratio cluster / single node: ${(medians[1]! / medians[0]!).toFixed(2)}×`);
    for (const setup of setups) {
      const { rate, failed } = await callsPerSecond(setup);
      log(
        `NATS verb calls (recordHandAct, 3 KV writes each), ${CALL_CONCURRENCY} at a time, ${CALL_SECONDS} s, ${setup.name}: ${rate.toFixed(0)} calls/s (${failed} refused)`,
      );
    }
    const onCluster = await connect({ servers: n1.url });
    const onSingle = await connect({ servers: single.url });
    try {
      const r1Single = await putsPerSecond(onSingle, 1);
      const r1 = await putsPerSecond(onCluster, 1);
      const r3 = await putsPerSecond(onCluster, 3);
      log(
        `KV puts (1 KiB), ${CALL_CONCURRENCY} at a time, ${PUT_SECONDS} s: single node R1 ${r1Single.toFixed(0)}/s; cluster R1 ${r1.toFixed(0)}/s; cluster R3 ${r3.toFixed(0)}/s (R3 / R1 on the cluster ${(r3 / r1).toFixed(2)}×)`,
      );
    } finally {
      await onCluster.close();
      await onSingle.close();
    }
  } finally {
    for (const s of setups) await s.stop().catch((error) => console.error(`stopping ${s.name}: ${error}`));
    await single.stop();
    await cluster.stop();
  }
  return [`machine: ${machineLine()}`, ...lines].join('\n');
}

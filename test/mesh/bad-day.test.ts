import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type ChildGateway, spawnGateway } from '../fixtures/child.js';
import { eventually } from '../fixtures/live.js';
import { type TestEnv, testEnv } from '../fixtures/services.js';

// A bad day, as an operator runs it: replicas on one store and one NATS, 10,000 machines beating
// every 5 s. Three replicas start, so that two are left after the serving one is SIGKILLed; then
// the one serving is SIGSTOPped for 20 s (the other takes over) and resumed. Each replica's status
// is read every half second throughout: no machine that kept beating may ever show LATE or SILENT on
// either, and the 100 machines that stopped beating must show LATE within 7.5 s + 2 s and SILENT
// within 30 s + 2 s of their last beat (SILENT comes while a replica is frozen).
// The heartbeat is 5 s, not the default 10 s: twice the news a second for the same mesh, the same
// 2 s bounds on tighter boundaries, and the day over in half the minute of silence it waits for.
const HEARTBEAT_S = 5;
const MACHINES = 10_000;
/** Every hundredth machine stops beating. */
const STOPPED_EVERY = 100;
const LATE_MS = 1.5 * HEARTBEAT_S * 1000;
const SILENT_MS = 6 * HEARTBEAT_S * 1000;
/** How much later than its boundary a stopped machine may be shown LATE or SILENT. */
const SHOWN_WITHIN_MS = 2_000;
const TICK_MS = 100;
const FREEZE_MS = 20_000;
/** How often each live replica's status is read, as a dashboard polling it would. */
const SAMPLE_EVERY_MS = 500;

let env: TestEnv;
const replicas: ChildGateway[] = [];

beforeAll(async () => {
  env = await testEnv('badday');
});
afterAll(async () => {
  for (const r of replicas) {
    r.child.kill('SIGCONT');
    await r.kill('SIGKILL');
  }
  await env?.cleanup();
}, 60_000);

const name = (i: number) => `bd-${String(i).padStart(5, '0')}`;
const stops = (i: number) => i % STOPPED_EVERY === 0;
const stoppedNames = Array.from({ length: MACHINES / STOPPED_EVERY }, (_, k) => name(k * STOPPED_EVERY));

interface Sample {
  replica: string;
  readAt: number;
  composedAt: number;
  heardUntil: number;
  seq: number;
  /** Machines shown LATE or SILENT, with their state. */
  notUp: Map<string, 'LATE' | 'SILENT'>;
}

const STATUS = '{ status { seq composedAt heardUntil machines { name state } } }';

/** Reads one replica's status as a dashboard would; undefined while it does not answer (frozen, killed). */
async function sample(replica: ChildGateway): Promise<Sample | undefined> {
  try {
    const response = await fetch(replica.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: STATUS }),
      signal: AbortSignal.timeout(3_000),
    });
    const { data } = (await response.json()) as {
      data?: { status: { seq: number; composedAt: string; heardUntil: string; machines: { name: string; state: string }[] } };
    };
    if (!data?.status) return undefined;
    const notUp = new Map<string, 'LATE' | 'SILENT'>();
    for (const m of data.status.machines) if (m.state !== 'UP') notUp.set(m.name, m.state as 'LATE' | 'SILENT');
    return {
      replica: replica.replica,
      readAt: Date.now(),
      composedAt: Date.parse(data.status.composedAt),
      heardUntil: Date.parse(data.status.heardUntil),
      seq: data.status.seq,
      notUp,
    };
  } catch {
    return undefined;
  }
}

/** The replica of `candidates` serving now, by the last lease line each logged. */
function servingOf(candidates: ChildGateway[]): ChildGateway | undefined {
  return candidates.find((r) => {
    const lines = r.output().split('\n');
    const last = lines.findLast((l) => l.includes('serving lease taken') || l.includes('serving lease lost'));
    return last?.includes('serving lease taken') && r.child.exitCode === null && r.child.signalCode === null;
  });
}

test('a SIGKILL and a 20 s SIGSTOP of the serving replica show no machine that kept beating LATE or SILENT; machines that stopped are shown on time', async () => {
  const childEnv = { ...env.env, MESH_HEARTBEAT_S: String(HEARTBEAT_S) };
  // The first makes the store and the streams; the other two start together, as replicas do.
  const a = await spawnGateway(childEnv);
  replicas.push(a);
  const [b, c] = await Promise.all([spawnGateway(childEnv), spawnGateway(childEnv)]);
  replicas.push(b, c);

  // The mesh, in a thread of its own so that reading three replicas' status every second does not
  // delay its beats: each machine beats every HEARTBEAT_S, spread evenly over the interval; on
  // 'stop' every STOPPED_EVERY-th machine stops; on 'end' it answers the longest gap between two
  // beats of a machine that kept beating.
  const mesh = new Worker(
    `const { parentPort, workerData: w } = require('node:worker_threads');
    import('@nats-io/transport-node').then(async ({ connect }) => {
      const nc = await connect({ servers: w.natsUrl });
      const last = new Map();
      let stopped = false, worst = 0, tick = 0;
      const ticks = (w.heartbeatS * 1000) / w.tickMs, perTick = w.machines / ticks;
      const timer = setInterval(() => {
        const from = (tick++ % ticks) * perTick, now = Date.now();
        for (let i = from; i < from + perTick; i++) {
          if (stopped && i % w.stoppedEvery === 0) continue;
          const name = 'bd-' + String(i).padStart(5, '0');
          if (last.has(name) && i % w.stoppedEvery !== 0) worst = Math.max(worst, now - last.get(name));
          last.set(name, now);
          nc.publish(w.subjects + '.news.machine.' + name, JSON.stringify({ kind: 'heartbeat', site: 'site-' + (i % 7), modules: ['agent'] }));
        }
      }, w.tickMs);
      parentPort.on('message', async (m) => {
        if (m === 'stop') stopped = true;
        if (m === 'end') { clearInterval(timer); await nc.drain(); parentPort.postMessage(worst); }
      });
    });`,
    {
      eval: true,
      workerData: {
        natsUrl: env.env.NATS_URL,
        subjects: env.subjects,
        heartbeatS: HEARTBEAT_S,
        tickMs: TICK_MS,
        machines: MACHINES,
        stoppedEvery: STOPPED_EVERY,
      },
    },
  );
  const endBeating = () => {
    const worst = new Promise<number>((resolve) => mesh.once('message', resolve));
    mesh.postMessage('end');
    return worst.finally(() => mesh.terminate());
  };

  const samples: Sample[] = [];
  let sampling = true;
  // Each replica read on its own, so that one frozen (its reads waiting out their 3 s) does not
  // slow the reading of the others.
  const alive = (r: ChildGateway) => r.child.exitCode === null && r.child.signalCode === null;
  const reading = Promise.all(
    replicas.map(async (replica) => {
      while (sampling && alive(replica)) {
        const started = Date.now();
        const read = await sample(replica);
        if (read) samples.push(read);
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, SAMPLE_EVERY_MS - (Date.now() - started))));
      }
    }),
  );

  try {
    // Every machine beat once and both replicas show them all UP.
    await eventually(
      async () => {
        const all = await Promise.all([a, b, c].map((r) => r.gql('{ status { machines { state } } }')));
        return (
          all.every(({ data }) => data?.status.machines.length === MACHINES && data.status.machines.every((m: { state: string }) => m.state === 'UP')) ||
          undefined
        );
      },
      'every replica showing all 10,000 machines UP',
      60_000,
      1_000,
    );

    mesh.postMessage('stop');
    const stoppedAt = Date.now();

    // SIGKILL the serving replica once it shows every stopped machine LATE (their SILENT boundaries
    // come during the freeze below). Not at a fixed instant after 'stop': a machine whose last beat
    // went out just before it has its LATE bound about then, and a kill amid the composition showing
    // it would leave the machine to the takeover, seconds later. How soon each was shown is judged
    // from the history below.
    await new Promise((resolve) => setTimeout(resolve, LATE_MS));
    const killed = await eventually(() => servingOf([a, b, c]), 'the serving replica', 10_000, 500);
    await eventually(
      () => samples.findLast((s) => s.replica === killed.replica && s.readAt > stoppedAt + LATE_MS && stoppedNames.every((m) => s.notUp.get(m) === 'LATE')),
      'the serving replica showing every stopped machine LATE',
      SHOWN_WITHIN_MS + 10_000,
      100,
    );
    await killed.kill('SIGKILL');
    const left = [a, b, c].filter((r) => r !== killed);
    const frozen = await eventually(() => servingOf(left), 'a survivor to take the serving lease', 20_000, 250);

    // SIGSTOP the serving replica for 20 s (a GC pause, a suspended VM), then let it go on.
    frozen.child.kill('SIGSTOP');
    const frozenAt = Date.now();
    const other = left.find((r) => r !== frozen)!;
    await eventually(() => servingOf([other]), 'the other replica to take the serving lease', 20_000, 250);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, frozenAt + FREEZE_MS - Date.now())));
    frozen.child.kill('SIGCONT');

    // The stopped machines go SILENT, seen on both live replicas (or not: the assertions below say what was seen).
    const silentBy = stoppedAt + SILENT_MS + SHOWN_WITHIN_MS;
    await eventually(
      () => {
        const recent = samples.filter((s) => s.readAt > silentBy - 1_000 && s.replica !== killed.replica);
        const seen = new Set(recent.filter((s) => stoppedNames.every((m) => s.notUp.get(m) === 'SILENT')).map((s) => s.replica));
        return seen.size >= 2 || undefined;
      },
      'the stopped machines SILENT on both replicas left',
      Math.max(0, silentBy - Date.now()) + 30_000,
      1_000,
    ).catch(() => undefined);
  } catch (error) {
    await endBeating();
    throw error;
  } finally {
    sampling = false;
    await reading;
  }

  expect(samples.length).toBeGreaterThan(100);

  // No machine that kept beating was ever shown LATE or SILENT, on any replica, in any sample.
  const falsely = samples.flatMap((s) =>
    [...s.notUp.keys()].filter((m) => !stops(Number(m.slice(3)))).map((m) => `${s.replica} seq ${s.seq}: ${m} ${s.notUp.get(m)}`),
  );
  expect(falsely.slice(0, 10)).toEqual([]);

  // Each machine that stopped was shown LATE, then SILENT, within 2 s of its boundary (by the
  // composition that first showed it), on every replica.
  // A stopped machine's last beat is the instant the mesh heard it (the news stream stored it), as
  // the store keeps it: this busy process may have sent it a little after it called publish.
  const answering = replicas.find((r) => r.child.exitCode === null && r.child.signalCode === null)!;
  const { data } = await answering.gql<{ machines: { name: string; lastHeardAt: string }[] }>('{ machines(state: SILENT) { name lastHeardAt } }');
  const heardLast = new Map(data!.machines.map((m) => [m.name, Date.parse(m.lastHeardAt)]));
  expect([...heardLast.keys()].sort()).toEqual(stoppedNames);
  // When each was shown LATE and SILENT: the composition that first showed it, from its history
  // in the status stream (every composition, not only those the samples above caught).
  const HISTORY = 'query($name: String!) { machineHistory(name: $name) { ... on QueryMachineHistorySuccess { data { at state } } } }';
  const history = async (machine: string) => {
    const { data: h } = await answering.gql<{ machineHistory: { data: { at: string; state: string | null }[] } }>(HISTORY, { name: machine });
    return h!.machineHistory.data.map((c) => ({ at: Date.parse(c.at), state: c.state }));
  };
  const shown: { machine: string; late: number; silent: number }[] = [];
  for (const machine of stoppedNames) {
    const last = heardLast.get(machine)!;
    const changes = await history(machine);
    const firstLate = changes.find((c) => c.state === 'LATE');
    const firstSilent = changes.find((c) => c.state === 'SILENT');
    shown.push({ machine, late: firstLate ? firstLate.at - last : Number.NaN, silent: firstSilent ? firstSilent.at - last : Number.NaN });
  }
  // No false UP: a stopped machine (it never beats again) once shown SILENT is never shown UP or
  // LATE after, in any composition of its history nor in any sample of a later seq on any replica.
  const falseUp: string[] = [];
  const silentSeq = new Map<string, number>();
  for (const s of [...samples].sort((x, y) => x.seq - y.seq)) {
    for (const m of stoppedNames) {
      const since = silentSeq.get(m);
      const state = s.notUp.get(m) ?? 'UP';
      if (since !== undefined && s.seq > since && state !== 'SILENT') falseUp.push(`${s.replica} seq ${s.seq}: ${m} ${state} after SILENT at seq ${since}`);
      if (state === 'SILENT' && since === undefined) silentSeq.set(m, s.seq);
    }
  }
  for (const machine of stoppedNames) {
    const changes = await history(machine);
    const silentAt = changes.findIndex((c) => c.state === 'SILENT');
    if (silentAt < 0) continue;
    for (const c of changes.slice(silentAt + 1))
      if (c.state !== 'SILENT' && c.state !== null) falseUp.push(`${machine} ${c.state} at ${new Date(c.at).toISOString()} after SILENT`);
  }
  console.log(`bad day: false LATE ${falsely.length}, false UP ${falseUp.length}`);
  expect(falseUp.slice(0, 10)).toEqual([]);
  // ...and a hundred machines that kept beating were UP in every composition of their history.
  for (let i = 1; i < MACHINES; i += Math.floor(MACHINES / 100)) {
    if (stops(i)) continue;
    // (The first entry is the machine before it was first heard: not in any composition yet.)
    expect((await history(name(i))).filter((c, at) => c.state !== 'UP' && !(at === 0 && c.state === null))).toEqual([]);
  }
  // The test's own mesh kept time: no machine meant to keep beating went a LATE interval without a beat.
  expect(await endBeating()).toBeLessThan(LATE_MS - 250);
  const worst = (key: 'late' | 'silent') => shown.reduce((w, x) => (Number.isNaN(x[key]) || x[key] > w[key] ? x : w));
  const figures = { late: worst('late'), silent: worst('silent') };
  console.log(
    `bad day: ${samples.length} samples; worst stopped machine shown LATE ${figures.late.late} ms and SILENT ${figures.silent.silent} ms after its last beat (boundaries ${LATE_MS} and ${SILENT_MS} ms)`,
  );
  for (const x of shown) {
    expect(x.late, `${x.machine} shown LATE after its last beat (${JSON.stringify(figures)})`).toBeGreaterThan(LATE_MS);
    expect(x.late, `${x.machine} shown LATE after its last beat (${JSON.stringify(figures)})`).toBeLessThanOrEqual(LATE_MS + SHOWN_WITHIN_MS);
    expect(x.silent, `${x.machine} shown SILENT after its last beat (${JSON.stringify(figures)})`).toBeGreaterThan(SILENT_MS);
    expect(x.silent, `${x.machine} shown SILENT after its last beat (${JSON.stringify(figures)})`).toBeLessThanOrEqual(SILENT_MS + SHOWN_WITHIN_MS);
  }
}, 240_000);

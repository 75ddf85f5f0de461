import { writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import WebSocket from 'ws';
import { type ChildGateway, spawnGateway } from '../test/fixtures/child.js';
import {
  alive,
  anotherServes,
  BEATS_PER_MESH_THREAD,
  machineName,
  metrics,
  quantile,
  ReplicaUse,
  serving,
  sleep,
  startBadDayWorld,
  startMesh,
  stoppedBoundaries,
} from './bad-day-kit.js';
import { bundledChildGateway } from './compiled.js';

// A million machines (issue 37): MACHINES machines beating every HEARTBEAT_S (16,700 beats a second
// at a million every 60 s), two replicas on one PostgreSQL and a NATS server of the bench's own,
// and the bad day of `bench badday`: once every machine is UP on both replicas and a steady window
// has been measured, every 100th machine stops; then the serving replica is SIGKILLed (a
// replacement started), the serving one SIGSTOPped for 20 s, and the NATS server restarted.
//
// How it reads the status without reading a million machines a second: each live replica is
// followed through one `statusChanges(everyMs: 1000)` subscription, a whole composition once when
// subscribed and after that only what changed, applied to a picture of the replica's status kept in
// the bench (one byte a machine). Every second the picture of each live replica that is not frozen
// is sampled: every machine that kept beating and is shown LATE or SILENT is one false
// machine-second, and every stopped machine's state is kept for the false UP count. So every
// machine is judged every second, and what crosses the wire is the changes.
const MACHINES = Number(process.env.BENCH_MACHINES ?? 1_000_000);
const HEARTBEAT_S = Number(process.env.BENCH_HEARTBEAT_S ?? 60);
const BEATS_PER_S = MACHINES / HEARTBEAT_S;
const MESH_THREADS = Number(process.env.BENCH_MESH_THREADS ?? Math.min(4, Math.max(1, Math.ceil(BEATS_PER_S / BEATS_PER_MESH_THREAD))));
const NAMES = { prefix: 'mm-', digits: Math.max(6, String(MACHINES - 1).length) };
const STOPPED_EVERY = 100;
const TICK_MS = 100;
const SAMPLE_MS = 1_000;
const PROGRESS_MS = Number(process.env.BENCH_PROGRESS_S ?? 10) * 1000;
const LATE_MS = 1.5 * HEARTBEAT_S * 1000;
const SILENT_MS = 6 * HEARTBEAT_S * 1000;
/** The start: every machine UP on both replicas (a million first beats are a million rows), within this or reported as reached. */
const WARM_S = Number(process.env.BENCH_WARM_S ?? Math.round(Math.max(180, 3 * HEARTBEAT_S + MACHINES / 1_500)));
/** All machines beating, no fault: the window PostgreSQL's rows a second and the CPU per beat are measured over. */
const STEADY_S = Number(process.env.BENCH_STEADY_S ?? 60);
/** A folder to write each replica's log to at the end (as `bench badday`): what a replica said while it fell behind. */
const LOGS = process.env.BENCH_LOGS;
/**
 * After the stopped machines stop, as `bench badday` at a 10 s beat: the kill just after their
 * LATE boundary, the freeze over their SILENT boundary, the NATS restart, the end.
 */
const KILL_AT_S = 2 * HEARTBEAT_S;
const FREEZE_S = 20;
const FREEZE_AT_S = Math.max(KILL_AT_S + 25, 6 * HEARTBEAT_S - 15);
const NATS_RESTART_AT_S = Math.max(FREEZE_AT_S + FREEZE_S + 15, 6 * HEARTBEAT_S + 40);
const NATS_DOWN_MS = 2_000;
const END_AT_S = NATS_RESTART_AT_S + 50;
/** A replacement replica re-reads the SILENT threshold of news before it serves: six million messages at a million machines. */
const REPLACEMENT_START_MS = Number(process.env.BENCH_REPLACEMENT_START_S ?? Math.max(120, MACHINES / 2_000)) * 1000;
const TAKEOVER_WAIT_MS = 30_000;
const HISTORIES = 50;
const HISTORY_READ_MS = 120_000;
const FOLLOW_RECONNECTS = 5;
const INGESTED = 'mesh_news_ingested_total';
const LAG = 'mesh_news_lag_seconds';

const ABSENT = 0;
const UP = 1;
const STATE_CODE: Record<string, number> = { UP, LATE: 2, SILENT: 3 };
const SILENT = STATE_CODE.SILENT!;
const STOPPED = Math.ceil(MACHINES / STOPPED_EVERY);
const stops = (i: number) => i % STOPPED_EVERY === 0;
const indexOf = (name: string) => {
  if (!name.startsWith(NAMES.prefix)) return -1;
  const i = Number(name.slice(NAMES.prefix.length));
  return Number.isInteger(i) && i >= 0 && i < MACHINES ? i : -1;
};
const CHANGES = `subscription { statusChanges(everyMs: ${SAMPLE_MS}) {
  full { seq heardUntil machines { name state } }
  delta { baseSeq seq heardUntil machines { added { name state } changed { name state } removed } } } }`;

interface MachineState {
  name: string;
  state: string;
}
interface StatusChange {
  full?: { seq: number; heardUntil: string; machines: MachineState[] } | null;
  delta?: { baseSeq: number; seq: number; heardUntil: string; machines: { added: MachineState[]; changed: MachineState[]; removed: string[] } } | null;
}

/** One replica's status as its `statusChanges` told it: a byte a machine, and the counts a sample reads. */
class Picture {
  readonly states = new Uint8Array(MACHINES);
  seq = 0;
  /** `heardUntil` of the composition held: how far behind the replica judges. */
  heardUntilMs = 0;
  present = 0;
  up = 0;
  /** Machines that keep beating shown LATE or SILENT. */
  falselyNotUp = 0;
  fulls = 0;
  deltas = 0;
  /** Deltas whose base was not the composition held (a message lost or out of order): then the picture is wrong until the next whole one. */
  gaps = 0;
  bytes = 0;

  private set(i: number, code: number): void {
    if (i < 0) return;
    const was = this.states[i]!;
    if (was === code) return;
    this.present += (code !== ABSENT ? 1 : 0) - (was !== ABSENT ? 1 : 0);
    this.up += (code === UP ? 1 : 0) - (was === UP ? 1 : 0);
    if (!stops(i)) this.falselyNotUp += (code > UP ? 1 : 0) - (was > UP ? 1 : 0);
    this.states[i] = code;
  }

  apply(change: StatusChange): void {
    if (change.full) {
      this.fulls++;
      this.states.fill(ABSENT);
      this.present = this.up = this.falselyNotUp = 0;
      for (const m of change.full.machines) this.set(indexOf(m.name), STATE_CODE[m.state] ?? ABSENT);
      this.seq = change.full.seq;
      this.heardUntilMs = Date.parse(change.full.heardUntil);
    } else if (change.delta) {
      this.deltas++;
      const { delta } = change;
      if (delta.baseSeq !== this.seq) this.gaps++;
      for (const name of delta.machines.removed) this.set(indexOf(name), ABSENT);
      for (const m of [...delta.machines.changed, ...delta.machines.added]) this.set(indexOf(m.name), STATE_CODE[m.state] ?? ABSENT);
      this.seq = delta.seq;
      this.heardUntilMs = Date.parse(delta.heardUntil);
    }
  }

  /** The stopped machines' states (0 absent, 1 UP, 2 LATE, 3 SILENT), every STOPPED_EVERY-th machine. */
  stopped(): Uint8Array {
    const out = new Uint8Array(STOPPED);
    for (let k = 0; k < STOPPED; k++) out[k] = this.states[k * STOPPED_EVERY]!;
    return out;
  }
}

/** A replica as the bench follows it. */
interface Replica {
  g: ChildGateway;
  picture: Picture;
  /** SIGSTOPped by the bench: its picture is stale and not sampled, as `bench badday` cannot read a frozen replica. */
  frozen: boolean;
  /** The bench is ending: its socket closing is not a reason to subscribe again. */
  ending: boolean;
  ingested?: number;
  reading: boolean;
}

/** Subscribes to the replica's statusChanges (graphql-ws) and applies each message to its picture; subscribes again if the socket closes while the replica lives. */
function follow(r: Replica, log: (line: string) => void, reconnects = FOLLOW_RECONNECTS): void {
  const ws = new WebSocket(r.g.url.replace(/^http/, 'ws'), 'graphql-transport-ws', { maxPayload: 2 ** 30 });
  ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: {} })));
  ws.on('message', (data) => {
    const text = data.toString();
    r.picture.bytes += text.length;
    const m = JSON.parse(text);
    if (m.type === 'connection_ack') ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: CHANGES } }));
    else if (m.type === 'ping') ws.send(JSON.stringify({ type: 'pong' }));
    else if (m.type === 'next' && m.payload?.data?.statusChanges) r.picture.apply(m.payload.data.statusChanges);
    else if (m.type === 'next' || m.type === 'error' || m.type === 'complete') log(`${r.g.replica}'s statusChanges: ${JSON.stringify(m).slice(0, 300)}`);
  });
  ws.on('error', () => undefined);
  ws.on('close', (code) => {
    if (!alive(r.g) || r.ending) return;
    log(`${r.g.replica}'s statusChanges socket closed (${code})${reconnects > 0 ? ': subscribing again' : ''}`);
    // A new subscription starts with a whole composition: the picture is replaced, not patched.
    if (reconnects > 0) setTimeout(() => follow(r, log, reconnects - 1), 1_000);
  });
}

/** How long one read of the statistics may take on a loaded machine, and how often it is tried. */
const ROWS_READ_MS = 15_000;
const ROWS_READ_TRIES = 3;

/** The bench database's rows written so far (inserted + updated + deleted), in all and by table; on a connection of its own each time, so one read timed out never holds up the next. */
export async function rowsWritten(databaseUrl: string): Promise<{ total: number; byTable: Map<string, number> } | undefined> {
  for (let t = 0; t < ROWS_READ_TRIES; t++) {
    const db = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: ROWS_READ_MS, query_timeout: ROWS_READ_MS });
    // The database dropped at the end ends the connection: not an error of the bench.
    db.on('error', () => undefined);
    try {
      await db.connect();
      const total = await db.query<{ n: string }>(
        'select tup_inserted + tup_updated + tup_deleted as n from pg_stat_database where datname = current_database()',
      );
      const tables = await db.query<{ relname: string; n: string }>('select relname, n_tup_ins + n_tup_upd + n_tup_del as n from pg_stat_user_tables');
      return { total: Number(total.rows[0]?.n ?? 0), byTable: new Map(tables.rows.map((row) => [row.relname, Number(row.n)])) };
    } catch {
      // Tried again: a figure missing from a window's edge is a figure missing from the report.
    } finally {
      await db.end().catch(() => undefined);
    }
  }
  return undefined;
}

interface Sample {
  replica: string;
  phase: string;
  seq: number;
  /** How far the composition held judged behind the clock, in seconds. */
  behindS: number;
  falselyNotUp: number;
  /** After the start only: the stopped machines' states. */
  stopped?: Uint8Array;
}

/** What the counters stood at, at one instant: a window's figures are the differences of two. */
interface Mark {
  at: number;
  sent: number;
  takenIn: number;
  byReplica: Map<string, number>;
  rows?: { total: number; byTable: Map<string, number> };
  cpuS: number;
}

const perSecond = (n: number, ms: number) => Math.round((n * 1000) / ms);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

export async function run(): Promise<string> {
  bundledChildGateway();
  const lines: string[] = [];
  const log = (line: string) => {
    lines.push(line);
    console.error(`[million] ${line}`);
  };
  log(`machine: ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, load ${load()}`);
  log(
    `${MACHINES} machines every ${HEARTBEAT_S} s (${Math.round(BEATS_PER_S)} beats a second) from ${MESH_THREADS} mesh threads; start within ${WARM_S} s, steady ${STEADY_S} s, then SIGKILL at +${KILL_AT_S} s, SIGSTOP at +${FREEZE_AT_S} s for ${FREEZE_S} s, NATS restart at +${NATS_RESTART_AT_S} s, end at +${END_AT_S} s`,
  );
  const world = await startBadDayWorld('million', HEARTBEAT_S);
  const { env, nats } = world;
  const replicas: Replica[] = [];
  const gateways = () => replicas.map((r) => r.g);
  const use = new ReplicaUse();
  const samples: Sample[] = [];
  const lags: { phase: string; lagS: number }[] = [];
  let phase = 'start';
  let sampling = true;
  let mesh: ReturnType<typeof startMesh> | undefined;
  /** The replacement's start, while under way: awaited (it is time-boxed) and killed at the end. */
  let replacement: Promise<ChildGateway | undefined> | undefined;
  let replacementStartS: number | undefined;
  /** The progress line's read of the counters, while under way: awaited before the database is dropped. */
  let marking: Promise<Mark> | undefined;
  /** Every replica started, the killed one and the replacement too: their logs are written at the end (BENCH_LOGS). */
  const spawned: ChildGateway[] = [];
  const spawnKept = async (...args: Parameters<typeof spawnGateway>) => {
    const g = await spawnGateway(...args);
    spawned.push(g);
    return g;
  };
  const addReplica = (g: ChildGateway) => {
    const r: Replica = { g, picture: new Picture(), frozen: false, ending: false, reading: false };
    replicas.push(r);
    follow(r, log);
    return r;
  };
  const takenIn = () => replicas.reduce((n, r) => n + (r.ingested ?? 0), 0);
  const mark = async (): Promise<Mark> => {
    use.read(gateways());
    return {
      at: Date.now(),
      sent: mesh?.sent() ?? 0,
      takenIn: takenIn(),
      byReplica: new Map(replicas.map((r) => [r.g.replica, r.ingested ?? 0])),
      rows: await rowsWritten(world.databaseUrl),
      cpuS: use.cpuTotal(),
    };
  };
  try {
    addReplica(await spawnKept(env));
    addReplica(await spawnKept(env));

    // Every second: each live replica's picture sampled, its /metrics read (without waiting on a frozen one), its RSS and CPU.
    const reading = (async () => {
      while (sampling) {
        const started = Date.now();
        for (const r of replicas) {
          if (!alive(r.g) || r.frozen || r.picture.seq === 0) continue;
          const p = r.picture;
          samples.push({
            replica: r.g.replica,
            phase,
            seq: p.seq,
            behindS: (Date.now() - p.heardUntilMs) / 1000,
            falselyNotUp: p.falselyNotUp,
            stopped: phase === 'start' ? undefined : p.stopped(),
          });
          if (r.reading) continue;
          r.reading = true;
          const at = phase;
          void metrics(r.g, [INGESTED, LAG]).then((values) => {
            r.reading = false;
            if (!values) return;
            if (values.has(INGESTED)) r.ingested = values.get(INGESTED);
            if (values.has(LAG)) lags.push({ phase: at, lagS: values.get(LAG)! });
          });
        }
        use.read(gateways());
        await sleep(Math.max(0, SAMPLE_MS - (Date.now() - started)));
      }
    })();
    // Every PROGRESS_MS a line: what was sent and taken in, the rows written, each replica's picture, the load.
    let last = await mark();
    const progress = setInterval(async () => {
      if (marking) return;
      marking = mark();
      const now = await marking.finally(() => {
        marking = undefined;
      });
      const ms = now.at - last.at;
      const rows = now.rows && last.rows ? `${perSecond(now.rows.total - last.rows.total, ms)}/s` : '?';
      const each = replicas
        .filter((r) => alive(r.g))
        .map(
          (r) =>
            `${r.g.replica}${r.frozen ? ' (frozen)' : ''} UP ${r.picture.up}/${r.picture.present} seq ${r.picture.seq} heard until −${((Date.now() - r.picture.heardUntilMs) / 1000).toFixed(1)} s`,
        )
        .join('; ');
      console.error(
        `[million] ${phase} at ${new Date().toISOString().slice(11, 19)}: sent ${perSecond(now.sent - last.sent, ms)}/s, taken in ${perSecond(now.takenIn - last.takenIn, ms)}/s, rows ${rows}; ${each}; lag ${lags.at(-1)?.lagS.toFixed(1) ?? '?'} s; load ${load()}`,
      );
      last = now;
    }, PROGRESS_MS);

    try {
      // The start: the mesh beats, every machine heard and shown UP on both replicas (a million first beats are a million rows).
      mesh = startMesh({
        ...NAMES,
        natsUrl: nats.url,
        subjects: env.MESH_SUBJECTS,
        heartbeatS: HEARTBEAT_S,
        tickMs: TICK_MS,
        machines: MACHINES,
        stoppedEvery: STOPPED_EVERY,
        threads: MESH_THREADS,
      });
      const startedAt = Date.now();
      let startS: number | undefined;
      while (Date.now() - startedAt < WARM_S * 1000) {
        if (replicas.every((r) => r.picture.up === MACHINES)) {
          startS = (Date.now() - startedAt) / 1000;
          break;
        }
        await sleep(500);
      }
      const reached = replicas.map((r) => `${r.g.replica} ${r.picture.up}`).join(', ');
      log(
        startS === undefined
          ? `start: NOT every machine UP within ${WARM_S} s (UP: ${reached} of ${MACHINES}); going on`
          : `start: ${MACHINES} machines UP on both replicas ${startS.toFixed(0)} s after the first beat`,
      );

      // Steady: all beating, no fault.
      phase = 'steady';
      const steadyFrom = await mark();
      await sleep(STEADY_S * 1000);
      const steadyTo = await mark();
      const steadyMs = steadyTo.at - steadyFrom.at;
      log(
        `steady ${(steadyMs / 1000).toFixed(0)} s: sent ${perSecond(steadyTo.sent - steadyFrom.sent, steadyMs)}/s, taken in ${perSecond(steadyTo.takenIn - steadyFrom.takenIn, steadyMs)}/s`,
      );

      // The bad day.
      mesh.stop();
      phase = 'stopped';
      const t0 = Date.now();
      const dayFrom = await mark();
      const at = (s: number) => sleep(Math.max(0, t0 + s * 1000 - Date.now()));
      log(`stopped every ${STOPPED_EVERY}th machine (${STOPPED})`);

      await at(KILL_AT_S);
      let takeoverMs: number | undefined;
      const killed = replicas.find((r) => serving(r.g));
      if (killed) {
        phase = 'kill';
        const killedAt = Date.now();
        await killed.g.kill('SIGKILL');
        // The replacement re-reads the SILENT threshold of news before it serves: it is not waited for here.
        replacement = spawnKept(env, REPLACEMENT_START_MS).then(
          (g) => {
            replacementStartS = (Date.now() - killedAt) / 1000;
            log(`the replacement ${g.replica} served ${replacementStartS.toFixed(1)} s after the SIGKILL`);
            if (sampling) addReplica(g);
            return g;
          },
          (error) => {
            log(`the replacement did not start within ${REPLACEMENT_START_MS / 1000} s: ${String(error).slice(0, 300)}`);
            return undefined;
          },
        );
        // Whichever serves first, the survivor or the replacement once it has joined (at a small mesh it is ready within the lease's time).
        takeoverMs = await anotherServes(gateways, killed.g, killedAt, TAKEOVER_WAIT_MS);
        log(`SIGKILL of the serving replica ${killed.g.replica}: another served after ${takeoverMs ?? `more than ${TAKEOVER_WAIT_MS}`} ms`);
      } else log('SIGKILL: no replica served, none killed');

      await at(FREEZE_AT_S);
      let freezeTakeoverMs: number | undefined;
      const frozen = replicas.find((r) => serving(r.g));
      if (frozen) {
        phase = 'freeze';
        frozen.frozen = true;
        frozen.g.child.kill('SIGSTOP');
        const frozenAt = Date.now();
        freezeTakeoverMs = await anotherServes(gateways(), frozen.g, frozenAt, FREEZE_S * 1000);
        log(`SIGSTOP of the serving replica ${frozen.g.replica}: another served after ${freezeTakeoverMs ?? `more than ${FREEZE_S * 1000}`} ms`);
        await at(FREEZE_AT_S + FREEZE_S);
        frozen.g.child.kill('SIGCONT');
        frozen.frozen = false;
        log('SIGCONT');
      } else log('SIGSTOP: no replica served, none frozen');

      await at(NATS_RESTART_AT_S);
      phase = 'nats-restart';
      await nats.restart({ downMs: NATS_DOWN_MS });
      log(`NATS server restarted (down ${NATS_DOWN_MS} ms)`);

      await at(END_AT_S);
      const dayTo = await mark();
      sampling = false;
      await reading;

      // How late stopped machines were shown, from their history (every composition), on a live replica.
      const answering = replicas.find((r) => alive(r.g) && !r.frozen)!.g;
      const stoppedRead: string[] = [];
      const step = STOPPED_EVERY * Math.max(1, Math.floor(STOPPED / HISTORIES));
      for (let i = 0; i < MACHINES && stoppedRead.length < HISTORIES; i += step) stoppedRead.push(machineName(NAMES, i));
      const histories = await stoppedBoundaries(answering, stoppedRead, { lateMs: LATE_MS, silentMs: SILENT_MS }, HISTORY_READ_MS);
      const { lateBy, silentBy } = histories;

      // A false UP in the samples: a stopped machine shown UP or LATE at a seq after one that showed it SILENT, on any replica.
      const silentSince = new Map<number, number>();
      let falseUpSamples = 0;
      const withStopped = samples.filter((s) => s.stopped).sort((x, y) => x.seq - y.seq);
      for (const s of withStopped) {
        for (let k = 0; k < STOPPED; k++) {
          const state = s.stopped![k]!;
          if (state === ABSENT) continue;
          if (state !== SILENT && (silentSince.get(k) ?? Number.POSITIVE_INFINITY) < s.seq) falseUpSamples++;
          if (state === SILENT && !silentSince.has(k)) silentSince.set(k, s.seq);
        }
      }
      const after = samples.filter((s) => s.phase !== 'start');
      const falseMachineSeconds = after.reduce((n, s) => n + s.falselyNotUp, 0);
      const byPhase = new Map<string, number>();
      for (const s of after) byPhase.set(s.phase, (byPhase.get(s.phase) ?? 0) + s.falselyNotUp);
      const startFalse = samples.filter((s) => s.phase === 'start').reduce((n, s) => n + s.falselyNotUp, 0);
      const lagsAfter = lags.filter((l) => l.phase !== 'start').map((l) => l.lagS);
      const behind = after.map((s) => s.behindS);
      const seconds = (xs: number[]) => (xs.length ? [quantile(xs, 0.5), quantile(xs, 0.99), Math.max(...xs)].map((x) => x.toFixed(1)).join(' / ') : 'none');

      const steadyRows = steadyTo.rows && steadyFrom.rows ? steadyTo.rows.total - steadyFrom.rows.total : undefined;
      const topTables = steadyTo.rows && steadyFrom.rows ? topWrites(steadyFrom.rows.byTable, steadyTo.rows.byTable, steadyMs) : '?';
      const dayMs = dayTo.at - dayFrom.at;
      const dayRows = dayTo.rows && dayFrom.rows ? perSecond(dayTo.rows.total - dayFrom.rows.total, dayMs) : '?';
      const share = (from: Mark, to: Mark) => {
        const total = to.takenIn - from.takenIn;
        return [...to.byReplica]
          .map(([r, n]) => [r, n - (from.byReplica.get(r) ?? 0)] as const)
          .map(([r, n]) => `${r}: ${total ? Math.round((100 * n) / total) : 0}% (${n})`)
          .join(', ');
      };
      const cpuPerBeat = (from: Mark, to: Mark) => `${(((to.cpuS - from.cpuS) * 1e6) / Math.max(1, to.sent - from.sent)).toFixed(0)} µs`;
      const followed = replicas.map(
        (r) => `${r.g.replica}: ${r.picture.fulls} whole, ${r.picture.deltas} deltas, ${r.picture.gaps} gaps, ${Math.round(r.picture.bytes / 2 ** 20)} MB`,
      );
      log(`load after: ${load()}`);
      log(`how the status was read: one statusChanges(everyMs: ${SAMPLE_MS}) a replica, applied to a picture sampled every second (${followed.join('; ')})`);
      const ms = (xs: number[]) => (xs.length ? `${quantile(xs, 0.5)} / ${Math.max(...xs)}` : 'none');
      return [
        ...lines,
        '',
        '| figure | value | goal |',
        '|---|---|---|',
        `| machines, heartbeat, beats a second | ${MACHINES}, ${HEARTBEAT_S} s, ${Math.round(BEATS_PER_S)} (${MESH_THREADS} mesh threads) | 1,000,000, 60 s, 16,700 |`,
        `| start: every machine UP on both replicas after the first beat | ${startS === undefined ? `not within ${WARM_S} s (UP: ${reached})` : `${startS.toFixed(0)} s`} | |`,
        `| beats sent / taken in a second, steady (${(steadyMs / 1000).toFixed(0)} s) | ${perSecond(steadyTo.sent - steadyFrom.sent, steadyMs)} / ${perSecond(steadyTo.takenIn - steadyFrom.takenIn, steadyMs)} | every beat |`,
        `| beats sent / taken in a second, the bad day (${(dayMs / 1000).toFixed(0)} s) | ${perSecond(dayTo.sent - dayFrom.sent, dayMs)} / ${perSecond(dayTo.takenIn - dayFrom.takenIn, dayMs)} | every beat |`,
        `| PostgreSQL rows written a second, steady (the bad day) | ${steadyRows === undefined ? '?' : perSecond(steadyRows, steadyMs)} (${dayRows}); most: ${topTables} | < 2,000 |`,
        `| each replica's share of the beats taken in, steady; the whole run | ${share(steadyFrom, steadyTo)}; ${replicas.map((r) => `${r.g.replica}: ${r.ingested ?? '?'}`).join(', ')} | about half each |`,
        `| false LATE/SILENT machine-seconds (${after.length} replica-seconds sampled) | ${falseMachineSeconds} (${[...byPhase].map(([p, n]) => `${p} ${n}`).join(', ')}; in the start ${startFalse}) | 0 |`,
        `| false UP/LATE after SILENT: machine-samples, changes in the histories read | ${falseUpSamples}, ${histories.falseUpInHistory} | 0 |`,
        `| stopped machines shown LATE past the boundary, p50 / max (ms) | ${ms(lateBy)} (${lateBy.length} of ${histories.read} read) | ≤ 2,000 |`,
        `| stopped machines shown SILENT past the boundary, p50 / max (ms) | ${ms(silentBy)} (${silentBy.length} of ${histories.read} read) | ≤ 2,000 |`,
        `| news lag (mesh_news_lag_seconds) p50 / p99 / max (s) | ${seconds(lagsAfter)} | |`,
        `| the status sampled: its heardUntil behind the clock, p50 / p99 / max (s) | ${seconds(behind)} | |`,
        `| RSS max per replica (MB) | ${use.rssCell()} | < 2,048 |`,
        `| CPU-seconds per replica, the whole run | ${use.cpuCell()} | |`,
        `| replicas' CPU per beat sent, steady; the bad day | ${cpuPerBeat(steadyFrom, steadyTo)}; ${cpuPerBeat(dayFrom, dayTo)} | |`,
        `| takeover after SIGKILL / SIGSTOP (ms); the replacement served after | ${takeoverMs ?? '—'} / ${freezeTakeoverMs ?? '—'}; ${replacementStartS === undefined ? 'not yet' : `${replacementStartS.toFixed(1)} s`} | < 5,000 |`,
      ].join('\n');
    } finally {
      clearInterval(progress);
    }
  } finally {
    sampling = false;
    await mesh?.end().catch(() => undefined);
    // Written before the wait too: a replacement that never starts must not take the logs with it.
    const keepLogs = () => {
      if (!LOGS) return;
      for (const g of spawned) writeFileSync(join(LOGS, `${g.replica}.log`), g.output());
      // NATS's warnings too: at a million its JetStream API stopped answering after the SIGKILL.
      writeFileSync(join(LOGS, 'nats-server.log'), world.nats.log());
    };
    keepLogs();
    if (replacement && replacementStartS === undefined) console.error("[million] waiting for the replacement's start to end, to stop it");
    const late = await replacement;
    if (late && !replicas.some((r) => r.g === late)) await late.kill('SIGKILL');
    await marking?.catch(() => undefined);
    for (const r of replicas) r.ending = true;
    for (const r of replicas) {
      r.g.child.kill('SIGCONT');
      await r.g.kill('SIGKILL');
    }
    keepLogs();
    await world.end();
  }
}

/** The three tables written most over a window, in rows a second. */
function topWrites(from: Map<string, number>, to: Map<string, number>, ms: number): string {
  return [...to]
    .map(([table, n]) => [table, n - (from.get(table) ?? 0)] as const)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([table, n]) => `${table} ${perSecond(n, ms)}/s`)
    .join(', ');
}

import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import { logJobFailure } from '../../kernel/errors.js';
import { instant, oneOf } from '../../kernel/values.js';
import type { Db, Store } from '../../store/db.js';
import type { DB, DurationTable } from '../../store/tables.js';
import { type HeartbeatRecorded, LATE_AFTER_INTERVALS } from '../machines/machines.js';

export type DurationKind = DurationTable['kind'];
export const DURATION_KINDS: readonly DurationKind[] = ['apply', 'heartbeat_gap', 'plan_tier', 'build'];

/** One observation as heard: what was timed, which thing, how long. */
export interface Duration {
  kind: DurationKind;
  /** The machine, build, `<plan>/<machine>` (apply) or `<plan>/<tier>` (plan_tier). */
  subject: string;
  seconds: number;
  heardAt: Date;
}

export interface DurationSummary {
  kind: DurationKind;
  count: number;
  /** Null where the window holds no observation of this kind. */
  min: number | null;
  mean: number | null;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  max: number | null;
  /** The bound in force for this kind, in seconds. */
  bound: number;
  /** How many observations in the window exceeded the bound. */
  exceeded: number;
}

/** One insert holds at most this many rows, well under Postgres' 65,535 parameters (4 per row). */
export const DURATION_INSERT_ROWS = 5_000;

/** Inserts observations, a statement per DURATION_INSERT_ROWS rows. Nothing to record: no statement. */
export async function recordDurations(db: Db, durations: readonly Duration[]): Promise<void> {
  for (let i = 0; i < durations.length; i += DURATION_INSERT_ROWS) {
    const rows = durations.slice(i, i + DURATION_INSERT_ROWS);
    await db
      .insertInto('duration')
      .values(rows.map((d) => ({ kind: d.kind, subject: d.subject, seconds: d.seconds, heard_at: d.heardAt })))
      .execute();
  }
}

/** The gap after which a heartbeat is late: 1.5 expected intervals, as for a machine's LATE state. */
export const heartbeatLateness = (heartbeatSeconds: number): number => LATE_AFTER_INTERVALS * heartbeatSeconds;

/**
 * The late heartbeats among those recorded, as heartbeat_gap observations (the gap since the one
 * before). A gap whose first beat was written before `heardSince` — the start of the gateway's
 * unbroken running — is left out: it spans a time when no replica was listening, so it measures
 * the gateway's downtime, not the machine's lateness.
 */
export function heartbeatGaps(recorded: readonly HeartbeatRecorded[], heartbeatSeconds: number, heardSince?: Date): Duration[] {
  const late = heartbeatLateness(heartbeatSeconds);
  const gaps: Duration[] = [];
  for (const beat of recorded) {
    if (!beat.previousAt || (heardSince && (!beat.previousWrittenAt || beat.previousWrittenAt < heardSince))) continue;
    const seconds = (beat.at.getTime() - beat.previousAt.getTime()) / 1000;
    if (seconds > late) gaps.push({ kind: 'heartbeat_gap', subject: beat.machine, seconds, heardAt: beat.at });
  }
  return gaps;
}

/** The bound each kind is judged against: the configured time-outs, and heartbeat lateness. */
export function boundsOf(config: Pick<Config, 'bounds' | 'heartbeatSeconds'>): Record<DurationKind, number> {
  return {
    apply: config.bounds.applySeconds,
    heartbeat_gap: heartbeatLateness(config.heartbeatSeconds),
    plan_tier: config.bounds.tierSeconds,
    build: config.bounds.buildSeconds,
  };
}

/**
 * Summarises the observations heard since `since` (default: all that are kept), per kind (or only
 * `kind`): count, min, mean, p50, p90, p99 and max in seconds, and how many exceeded the bound in
 * force. A kind with no observation is still listed, with count 0. One SQL statement.
 */
export async function summarise(
  db: Db,
  config: Pick<Config, 'bounds' | 'heartbeatSeconds' | 'durationRetentionDays'>,
  kind?: DurationKind | null,
  since?: Date | null,
): Promise<DurationSummary[]> {
  const bounds = boundsOf(config);
  const kinds = kind ? [kind] : DURATION_KINDS;
  const from = since ?? new Date(Date.now() - config.durationRetentionDays * 86_400_000);
  const wanted = sql.join(kinds.map((k) => sql`(${k}::text, ${bounds[k]}::double precision)`));
  const result = await sql<DurationSummary>`
    select k.kind, count(d.seconds)::int as count,
           min(d.seconds) as min, avg(d.seconds) as mean,
           percentile_cont(0.5) within group (order by d.seconds) as p50,
           percentile_cont(0.9) within group (order by d.seconds) as p90,
           percentile_cont(0.99) within group (order by d.seconds) as p99,
           max(d.seconds) as max, k.bound,
           count(d.seconds) filter (where d.seconds > k.bound)::int as exceeded
      from (values ${wanted}) as k(kind, bound)
      left join duration d on d.kind = k.kind and d.heard_at >= ${from}
     group by k.kind, k.bound
     order by k.kind`.execute(db);
  return result.rows;
}

/** What reading durations needs of the mesh: the store and the bounds in force. */
export interface DurationsMesh {
  db: Db;
  config: Pick<Config, 'bounds' | 'heartbeatSeconds' | 'durationRetentionDays'>;
}

const KIND_NAMES = DURATION_KINDS.map((k) => k.toUpperCase());

/**
 * The `durations` reading, whichever door asks: `kind` by its GraphQL name (APPLY, …) in either
 * case, `since` an instant. Invalid for an unknown kind or an unreadable instant.
 */
export function readDurations(mesh: DurationsMesh, query: { kind?: string | null; since?: Date | string | null }): Promise<DurationSummary[]> {
  const kind = oneOf(typeof query.kind === 'string' ? query.kind.toUpperCase() : query.kind, KIND_NAMES, 'kind');
  return summarise(mesh.db, mesh.config, kind ? (kind.toLowerCase() as DurationKind) : undefined, instant(query.since, 'since'));
}

/** Rows deleted per statement when pruning, so one prune never holds a long lock on a big table. */
export const PRUNE_BATCH = 10_000;

/** Deletes observations heard before the retention window; returns how many went. */
export async function pruneDurations(db: Kysely<DB>, retentionDays: number, now = new Date()): Promise<number> {
  const cutoff = new Date(now.getTime() - retentionDays * 86_400_000);
  let total = 0;
  for (;;) {
    const deleted = await db
      .deleteFrom('duration')
      .where('id', 'in', (eb) => eb.selectFrom('duration').select('id').where('heard_at', '<', cutoff).limit(PRUNE_BATCH))
      .executeTakeFirst();
    const n = Number(deleted.numDeletedRows);
    total += n;
    if (n < PRUNE_BATCH) return total;
  }
}

/** How often pruning runs: retention is counted in days, so hourly keeps the table within an hour of it. */
export const PRUNE_EVERY_MS = 60 * 60 * 1000;

/** Prunes at start and then every PRUNE_EVERY_MS; a failed prune is logged and tried again next time. */
export function startDurationPruning(mesh: { db: Store; config: Pick<Config, 'durationRetentionDays'>; logger: Logger }): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const prune = () => {
    if (running) return;
    running = pruneDurations(mesh.db, mesh.config.durationRetentionDays)
      .then((n) => {
        if (n > 0) mesh.logger.info({ pruned: n, retentionDays: mesh.config.durationRetentionDays }, 'durations pruned');
      })
      .catch((err) => logJobFailure(mesh.logger, err, 'pruning durations failed'))
      .finally(() => (running = undefined));
  };
  prune();
  const timer = setInterval(prune, PRUNE_EVERY_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

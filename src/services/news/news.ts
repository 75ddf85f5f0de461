import type { Msg, Subscription } from '@nats-io/transport-node';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { DB } from '../../store/tables.js';
import { heartbeatGaps, recordDurations, type Duration } from '../durations/durations.js';
import { recordHeartbeats, type Heartbeat } from '../machines/machines.js';
import type { Mesh } from '../mesh.js';
import { checkName } from '../../kernel/names.js';
import { applyReports, type Report } from '../plans/rollout.js';

/** How long news is collected before it is written: a few ms, so one transaction carries many beats. */
export const NEWS_BATCH_MS = 5;
/**
 * A batch holds at most this many messages. Beats of one machine in a batch are written as one
 * row, so under a high rate a larger batch costs the store no more than the mesh has machines;
 * the writes are still cut into transactions of HEARTBEAT_CHUNK_PAIRS.
 */
export const NEWS_BATCH_MAX = 100_000;
/** News waiting to be written is bounded: past this, new messages are dropped (counted, logged) rather than grow memory. */
export const NEWS_PENDING_MAX = 200_000;
/** A report's detail is kept up to this many characters: it is a hint for people, not a log. */
export const REPORT_DETAIL_MAX = 4_096;
/** A heartbeat lists at most this many modules and claims per module; no real machine runs more. */
export const MODULES_MAX = 256;
/**
 * Heartbeats go to the store in transactions of at most this many (machine, module) pairs, so the
 * row locks one transaction holds are released within a few hundred milliseconds.
 */
export const HEARTBEAT_CHUNK_PAIRS = 5_000;

const name = (what: string) =>
  z.string().transform((value, ctx) => {
    try {
      return checkName(value, what);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
  });

const at = z.iso.datetime({ offset: true }).optional();

const heartbeatSchema = z.object({
  kind: z.literal('heartbeat'),
  at,
  site: name('site').nullish(),
  modules: z.array(name('module')).max(MODULES_MAX),
  claims: z.record(z.string(), z.array(name('seat')).max(MODULES_MAX)).optional(),
});

const reportSchema = z.object({
  kind: z.literal('report'),
  at,
  plan: name('plan'),
  build: name('build'),
  ok: z.boolean(),
  detail: z
    .string()
    .nullish()
    .transform((d) => (d == null ? d : d.slice(0, REPORT_DETAIL_MAX))),
});

const machineNewsSchema = z.discriminatedUnion('kind', [heartbeatSchema, reportSchema]);

const buildNewsSchema = z.object({
  kind: z.enum(['started', 'finished', 'failed']),
  at,
  module: name('module').nullish(),
});

export interface BuildNews {
  build: string;
  kind: 'started' | 'finished' | 'failed';
  module?: string | null;
  at: Date;
}

/** One news message, judged: what it says, or why it was refused. */
export type News =
  | { type: 'heartbeat'; heartbeat: Heartbeat }
  | { type: 'report'; report: Report }
  | { type: 'build'; build: BuildNews }
  | { type: 'malformed'; reason: string };

function reason(error: z.ZodError): string {
  return error.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message)).join('; ');
}

/**
 * Judges one message from `<root>.news.machine.<machine>` or `<root>.news.build.<build>`: the
 * subject's last token is the machine or build (one name rule), the body JSON per the wire
 * contract. `at` defaults to `heardAt`, and an `at` in the future is taken as `heardAt`.
 */
export function judgeNews(root: string, subject: string, body: Uint8Array | string, heardAt: Date): News {
  const machinePrefix = `${root}.news.machine.`;
  const buildPrefix = `${root}.news.build.`;
  const isMachine = subject.startsWith(machinePrefix);
  if (!isMachine && !subject.startsWith(buildPrefix)) return { type: 'malformed', reason: 'not a news subject' };
  const token = subject.slice((isMachine ? machinePrefix : buildPrefix).length);
  try {
    checkName(token, isMachine ? 'machine' : 'build');
  } catch (error) {
    return { type: 'malformed', reason: (error as Error).message };
  }
  let json: unknown;
  try {
    json = JSON.parse(typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
  } catch (error) {
    return { type: 'malformed', reason: `the body is not JSON: ${(error as Error).message}` };
  }
  const when = (iso: string | undefined) => {
    if (!iso) return heardAt;
    const t = new Date(iso);
    return t.getTime() > heardAt.getTime() ? heardAt : t;
  };
  if (isMachine) {
    const parsed = machineNewsSchema.safeParse(json);
    if (!parsed.success) return { type: 'malformed', reason: reason(parsed.error) };
    const news = parsed.data;
    if (news.kind === 'heartbeat') {
      const claims = news.claims ? Object.fromEntries(Object.entries(news.claims).filter(([module]) => news.modules.includes(module))) : undefined;
      return { type: 'heartbeat', heartbeat: { machine: token, site: news.site ?? null, modules: news.modules, claims, at: when(news.at) } };
    }
    return { type: 'report', report: { machine: token, plan: news.plan, build: news.build, ok: news.ok, detail: news.detail ?? null, at: when(news.at) } };
  }
  const parsed = buildNewsSchema.safeParse(json);
  if (!parsed.success) return { type: 'malformed', reason: reason(parsed.error) };
  return { type: 'build', build: { build: token, kind: parsed.data.kind, module: parsed.data.module ?? null, at: when(parsed.data.at) } };
}

/**
 * Records build news in order, in one transaction: `started` (re)starts a build, `finished` or
 * `failed` ends it (the first end only) and, when its start was heard, answers its build duration.
 */
export async function recordBuildNews(db: Kysely<DB>, news: readonly BuildNews[]): Promise<Duration[]> {
  if (news.length === 0) return [];
  const ordered = [...news].sort((a, b) => a.at.getTime() - b.at.getTime());
  return db.transaction().execute(async (tx) => {
    const durations: Duration[] = [];
    for (const n of ordered) {
      if (n.kind === 'started') {
        await tx
          .insertInto('build')
          .values({ name: n.build, module: n.module ?? null, state: 'started', started_at: n.at, ended_at: null })
          .onConflict((oc) => oc.column('name').doUpdateSet({ module: n.module ?? null, state: 'started', started_at: n.at, ended_at: null }))
          .execute();
        continue;
      }
      // A build already ended keeps its first end: a repeated finish is not a second duration.
      const ended = await tx
        .insertInto('build')
        .values({ name: n.build, module: n.module ?? null, state: n.kind, started_at: null, ended_at: n.at })
        .onConflict((oc) => oc.column('name').doUpdateSet({ state: n.kind, ended_at: n.at }).where('build.ended_at', 'is', null))
        .returning(['started_at'])
        .executeTakeFirst();
      if (ended?.started_at) {
        const seconds = Math.max(0, (n.at.getTime() - new Date(ended.started_at).getTime()) / 1000);
        durations.push({ kind: 'build', subject: n.build, seconds, heardAt: n.at });
      }
    }
    return durations;
  });
}

export interface NewsStats {
  received: number;
  ingested: number;
  malformed: number;
  /** Dropped because NEWS_PENDING_MAX messages were already waiting. */
  dropped: number;
  /** Lost because their batch could not be written (logged with the error). */
  failed: number;
  batches: number;
}

export interface NewsIngest {
  stats: NewsStats;
  /** Resolves once everything received so far is written. */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

type Judged = Exclude<News, { type: 'malformed' }>;

const TRANSIENT = new Set(['40P01', '40001']); // deadlock, serialization failure: another replica's batch crossed ours

async function retryOnce<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!TRANSIENT.has((error as { code?: string }).code ?? '')) throw error;
    return work();
  }
}

/**
 * Cuts heartbeats into runs of at most HEARTBEAT_CHUNK_PAIRS (machine, module) pairs, every beat of
 * one machine in the same run (recordHeartbeats writes a machine once however many beats it has).
 */
function chunked(beats: Heartbeat[]): Heartbeat[][] {
  const byMachine = new Map<string, Heartbeat[]>();
  for (const beat of beats) {
    const of = byMachine.get(beat.machine);
    if (of) of.push(beat);
    else byMachine.set(beat.machine, [beat]);
  }
  const chunks: Heartbeat[][] = [];
  let current: Heartbeat[] = [];
  let pairs = 0;
  for (const of of byMachine.values()) {
    const n = Math.max(1, ...of.map((b) => b.modules.length));
    if (current.length && pairs + n > HEARTBEAT_CHUNK_PAIRS) {
      chunks.push(current);
      current = [];
      pairs = 0;
    }
    current.push(...of);
    pairs += n;
  }
  if (current.length) chunks.push(current);
  return chunks;
}

/**
 * Writes one batch of judged news: heartbeats in one transaction (machines and assignments) with
 * their late gaps, build news with build durations, reports through the rollout. Emits 'news'.
 */
export async function ingestBatch(mesh: Pick<Mesh, 'db' | 'bus' | 'subjects' | 'logger' | 'events' | 'config'>, batch: readonly Judged[]): Promise<void> {
  const beats: Heartbeat[] = [];
  const reports: Report[] = [];
  const builds: BuildNews[] = [];
  for (const news of batch) {
    if (news.type === 'heartbeat') beats.push(news.heartbeat);
    else if (news.type === 'report') reports.push(news.report);
    else builds.push(news.build);
  }
  const durations: Duration[] = [];
  for (const chunk of chunked(beats)) {
    const recorded = await retryOnce(() => recordHeartbeats(mesh.db, chunk));
    durations.push(...heartbeatGaps(recorded, mesh.config.heartbeatSeconds));
  }
  if (builds.length) durations.push(...(await retryOnce(() => recordBuildNews(mesh.db, builds))));
  await recordDurations(mesh.db, durations);
  if (reports.length) {
    const applied = await retryOnce(() => applyReports(mesh, reports));
    if (applied.unmatched) mesh.logger.info({ unmatched: applied.unmatched }, 'reports matching no apply sent were ignored');
  }
  if (beats.length || reports.length) mesh.events.emit('news', 'machine');
  if (builds.length) mesh.events.emit('news', 'build');
}

/**
 * Subscribes to machine and build news in a queue group, so each message is written by one
 * replica. Messages are judged as they arrive (a malformed one is counted, logged with its subject
 * and dropped) and written in batches: collected for NEWS_BATCH_MS, one batch written at a time.
 */
export function startNewsIngest(mesh: Pick<Mesh, 'db' | 'bus' | 'subjects' | 'logger' | 'events' | 'config'>): NewsIngest {
  const stats: NewsStats = { received: 0, ingested: 0, malformed: 0, dropped: 0, failed: 0, batches: 0 };
  const queue = `${mesh.config.controller}-news`;
  let pending: Judged[] = [];
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> | undefined;
  let idle: (() => void)[] = [];

  const schedule = () => {
    if (timer || writing || pending.length === 0) return;
    timer = setTimeout(write, pending.length >= NEWS_BATCH_MAX ? 0 : NEWS_BATCH_MS);
  };

  const write = () => {
    timer = undefined;
    const batch = pending.splice(0, NEWS_BATCH_MAX);
    if (batch.length === 0) {
      for (const resolve of idle.splice(0)) resolve();
      return;
    }
    stats.batches++;
    writing = ingestBatch(mesh, batch)
      .then(() => {
        stats.ingested += batch.length;
      })
      .catch((err) => {
        stats.failed += batch.length;
        mesh.logger.error({ err, messages: batch.length }, 'writing a batch of news failed');
      })
      .finally(() => {
        writing = undefined;
        if (pending.length) schedule();
        else for (const resolve of idle.splice(0)) resolve();
      });
  };

  const onMessage = (err: Error | null, msg: Msg) => {
    if (err) {
      mesh.logger.error({ err }, 'news subscription failed');
      return;
    }
    stats.received++;
    const news = judgeNews(mesh.subjects.root, msg.subject, msg.data, new Date());
    if (news.type === 'malformed') {
      stats.malformed++;
      mesh.logger.warn({ subject: msg.subject, reason: news.reason, bytes: msg.data.length }, 'malformed news ignored');
      return;
    }
    if (pending.length >= NEWS_PENDING_MAX) {
      stats.dropped++;
      if (stats.dropped % 1000 === 1) mesh.logger.warn({ dropped: stats.dropped, pending: pending.length }, 'news arrives faster than it is written: dropping');
      return;
    }
    pending.push(news);
    schedule();
  };

  const subscriptions: Subscription[] = [
    mesh.bus.nc.subscribe(mesh.subjects.allMachineNews, { queue, callback: onMessage }),
    mesh.bus.nc.subscribe(mesh.subjects.allBuildNews, { queue, callback: onMessage }),
  ];

  const flush = () =>
    new Promise<void>((resolve) => {
      if (!writing && pending.length === 0) return resolve();
      idle.push(resolve);
      if (timer) {
        clearTimeout(timer);
        write();
      } else schedule();
    });

  return {
    stats,
    flush,
    async stop() {
      for (const sub of subscriptions) sub.unsubscribe();
      await flush();
      if (timer) clearTimeout(timer);
      idle = [];
    },
  };
}

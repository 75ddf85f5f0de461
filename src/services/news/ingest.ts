import type { Msg, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { Bus } from '../../bus/nats.js';
import type { Subjects } from '../../bus/subjects.js';
import type { Store } from '../../store/db.js';
import { type Duration, heartbeatGaps, recordDurations } from '../durations/durations.js';
import type { MeshEvents } from '../events.js';
import { type Heartbeat, recordHeartbeats } from '../machines/machines.js';
import { applyReports, type Report, type RolloutMesh } from '../plans/rollout.js';
import type { Leases } from '../replicas/leases.js';
import { type BuildNews, recordBuildNews } from './builds.js';
import { judgeNews, type News } from './wire.js';

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
/**
 * Heartbeats go to the store in transactions of at most this many (machine, module) pairs, so the
 * row locks one transaction holds are released within a few hundred milliseconds.
 */
export const HEARTBEAT_CHUNK_PAIRS = 5_000;

/** What ingesting news needs of the mesh: the store, the bus it arrives on, and what a rollout needs for reports. */
export interface IngestMesh extends RolloutMesh {
  db: Store;
  bus: Pick<Bus, 'nc'>;
  subjects: Pick<Subjects, 'root' | 'allMachineNews' | 'allBuildNews' | 'planApply'>;
  logger: Logger;
  events: MeshEvents;
  config: { controller: string; heartbeatSeconds: number };
  leases: Pick<Leases, 'continuousSince'>;
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
export async function ingestBatch(mesh: IngestMesh, batch: readonly Judged[]): Promise<void> {
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
    durations.push(...heartbeatGaps(recorded, mesh.config.heartbeatSeconds, mesh.leases.continuousSince()));
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
export function startNewsIngest(mesh: IngestMesh): NewsIngest {
  const stats: NewsStats = { received: 0, ingested: 0, malformed: 0, dropped: 0, failed: 0, batches: 0 };
  const queue = `${mesh.config.controller}-news`;
  const pending: Judged[] = [];
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

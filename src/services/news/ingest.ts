import type { Consumer, ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { NEWS_WORKING_EVERY_MS } from '../../bus/news-stream.js';
import type { Subjects } from '../../bus/subjects.js';
import { inBatchSpan } from '../../bus/trace-context.js';
import { isStoreUnavailable } from '../../kernel/errors.js';
import { STORE_WAIT_FIRST_MS, STORE_WAIT_MAX_MS, type Store } from '../../store/db.js';
import { type Duration, heartbeatGaps, recordDurations } from '../durations/durations.js';
import type { MeshEvents } from '../events.js';
import { withoutControllerClaims } from '../machines/claims.js';
import { type Heartbeat, recordHeartbeats } from '../machines/machines.js';
import { applyReports, type Report, type RolloutMesh } from '../plans/rollout.js';
import type { Leases } from '../replicas/leases.js';
import { type BuildNews, recordBuildNews } from './builds.js';
import { malformedLog } from './malformed-log.js';
import { judgeNews, type News } from './wire.js';

/** Handed-back messages remembered so that a batch retried is counted received once: a few store outages' worth of what one replica holds. */
const HANDED_BACK_KEPT = 100_000;

/** How long news is collected before it is written: a few ms, so one transaction carries many beats. */
export const NEWS_BATCH_MS = 5;
/**
 * A batch holds at most this many messages. Beats of one machine in a batch are written as one
 * row, so under a high rate a larger batch costs the store no more than the mesh has machines;
 * the writes are still cut into transactions of HEARTBEAT_CHUNK_PAIRS.
 */
export const NEWS_BATCH_MAX = 100_000;
/** News waiting to be written is bounded: at this many, no more is pulled from the stream until a batch is written. */
export const NEWS_PENDING_MAX = 200_000;
/**
 * A replica holds (pulled and not yet written) at most about this long of the news it writes: what
 * it cannot write in that time stays in the stream, where another replica can pull it, and a
 * replica that dies or freezes holds back no more than this of the mesh (docs/status.md).
 */
export const NEWS_HELD_MS = 1_000;
/** ...but never fewer than this many messages, so a quiet start is not throttled. */
export const NEWS_HELD_MIN = 1_000;
/** The rate news is written at is measured over this window, for NEWS_HELD_MS. */
const NEWS_RATE_WINDOW_MS = 2_000;
/** One pull from the news stream asks for at most this many messages (the fetch size measured when the stack was chosen; docs/status.md, "The consumer"). */
export const NEWS_FETCH_MAX = 10_000;
/**
 * A pull waits this long for messages before the next is asked. Its idle heartbeat is half of it:
 * long enough that a process busy writing a large batch does not miss one and drop the pull.
 */
const NEWS_FETCH_EXPIRES_MS = 10_000;
/** After a pull failed (NATS restarting, the consumer being re-created) the next is tried this much later. */
export const NEWS_PULL_RETRY_MS = 1_000;
/**
 * Heartbeats go to the store in transactions of at most this many (machine, module) pairs, so the
 * row locks one transaction holds are released within a few hundred milliseconds.
 */
export const HEARTBEAT_CHUNK_PAIRS = 5_000;

/** What ingesting news needs of the mesh: the store, the bus it arrives on, and what a rollout needs for reports. */
export interface IngestMesh extends RolloutMesh {
  db: Store;
  subjects: Pick<Subjects, 'root' | 'planApply'>;
  logger: Logger;
  events: MeshEvents;
  config: { controller: string; heartbeatSeconds: number };
  leases: Pick<Leases, 'continuousSince'>;
}

export interface NewsStats {
  /** Messages delivered to this replica, each once: one it handed back and was delivered again is counted in `redelivered`, not again here. */
  received: number;
  /** Written to the store (and acknowledged). */
  ingested: number;
  /** Refused by the wire contract (acknowledged, so never delivered again). */
  malformed: number;
  /** Valid by the wire contract yet refused by the store alone: found by splitting its batch, logged, dropped. */
  poison: number;
  /** Handed back to the stream unwritten because the store was unavailable: delivered again later. */
  redelivered: number;
  batches: number;
}

export interface NewsIngest {
  stats: NewsStats;
  /** Resolves once everything received so far is written (or handed back); logs the malformed news counted and not yet logged. */
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
 * their late gaps, build news with build durations, reports through the rollout. Emits 'news'
 * with the machines whose beats were written, for the composer to re-read only those.
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
    const recorded = await retryOnce(() => recordHeartbeats(mesh.db, withoutControllerClaims(chunk, mesh)));
    durations.push(...heartbeatGaps(recorded, mesh.config.heartbeatSeconds, mesh.leases.continuousSince()));
  }
  if (builds.length) durations.push(...(await retryOnce(() => recordBuildNews(mesh.db, builds))));
  await recordDurations(mesh.db, durations);
  if (reports.length) {
    const applied = await retryOnce(() => applyReports(mesh, reports));
    if (applied.unmatched) mesh.logger.info({ unmatched: applied.unmatched }, 'reports matching no apply sent were ignored');
  }
  if (beats.length || reports.length) mesh.events.emit('news', 'machine', [...new Set(beats.map((b) => b.machine))]);
  if (builds.length) mesh.events.emit('news', 'build');
}

/** One message pulled and judged, held until its batch is written. */
interface Held {
  news: Judged;
  msg: JsMsg;
  /** When it was pulled, or last told to the stream as being worked on (Date.now()). */
  touchedAt: number;
}

/** Messages written over the last NEWS_RATE_WINDOW_MS: how much news is about NEWS_HELD_MS of it. */
function writtenRate(): { add(n: number): void; perMs(): number } {
  let windowStart = Date.now();
  let inWindow = 0;
  let lastRate = 0;
  return {
    add(n) {
      const now = Date.now();
      if (now - windowStart >= NEWS_RATE_WINDOW_MS) {
        lastRate = inWindow / (now - windowStart);
        windowStart = now;
        inWindow = 0;
      }
      inWindow += n;
    },
    perMs: () => Math.max(lastRate, inWindow / Math.max(1, Date.now() - windowStart)),
  };
}

/**
 * Pulls machine and build news from the controller's news stream through its one durable
 * consumer (shared by every replica, so each message is written by one replica). Messages are
 * judged as they arrive (a malformed one is counted, logged and acknowledged) and written in
 * batches: collected for NEWS_BATCH_MS, one batch written at a time. A message is acknowledged
 * only once its batch is written. A batch the store cannot take because it is unavailable is handed
 * back (nak with a delay, doubling from STORE_WAIT_FIRST_MS to STORE_WAIT_MAX_MS) and pulling
 * pauses as long; a batch it refuses is split in halves until the message it refuses is found.
 */
export function startNewsIngest(mesh: IngestMesh, consumer: Pick<Consumer, 'fetch'>): NewsIngest {
  const stats: NewsStats = { received: 0, ingested: 0, malformed: 0, poison: 0, redelivered: 0, batches: 0 };
  /** The stream sequences this replica handed back, so their next delivery is not counted received again (at most HANDED_BACK_KEPT, oldest out). */
  const handedBack = new Set<number>();
  const pending: Held[] = [];
  /** The batch being written. */
  let inWrite: Held[] = [];
  const rate = writtenRate();
  /** How many messages this replica may hold: about NEWS_HELD_MS of what it writes. */
  const heldMax = () => Math.min(NEWS_PENDING_MAX, Math.max(NEWS_HELD_MIN, Math.ceil(rate.perMs() * NEWS_HELD_MS)));
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> | undefined;
  let idle: (() => void)[] = [];
  let stopped = false;
  let resumeAt = 0;
  let backoff = STORE_WAIT_FIRST_MS;
  let fetching: ConsumerMessages | undefined;
  const malformed = malformedLog(mesh.logger);
  const naps = new Set<() => void>();
  const wake = () => {
    for (const resolve of naps) resolve();
    naps.clear();
  };
  const nap = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(() => (naps.delete(done), resolve()), ms);
      const done = () => (clearTimeout(t), resolve());
      naps.add(done);
    });

  const schedule = () => {
    if (timer || writing || pending.length === 0) return;
    const wait = Math.max(resumeAt - Date.now(), pending.length >= NEWS_BATCH_MAX ? 0 : NEWS_BATCH_MS);
    timer = setTimeout(write, wait);
  };

  /** The store is unavailable: the batch goes back to the stream, to come again once the pause is over. */
  const handBack = (batch: Held[], err: unknown) => {
    const now = Date.now();
    if (resumeAt <= now) {
      resumeAt = now + backoff;
      mesh.logger.warn(
        { err: String(err), messages: batch.length, retryInMs: backoff },
        'the store is unavailable: news is kept in the stream and tried again',
      );
      backoff = Math.min(backoff * 2, STORE_WAIT_MAX_MS);
    }
    const delay = Math.max(resumeAt - now, 1);
    for (const held of batch) {
      held.msg.nak(delay);
      handedBack.add(held.msg.seq);
    }
    for (const seq of handedBack) {
      if (handedBack.size <= HANDED_BACK_KEPT) break;
      handedBack.delete(seq);
    }
    stats.redelivered += batch.length;
  };

  /** Writes a batch; one the store refuses is split in halves until the messages it refuses are found. */
  const writeSplitting = async (batch: Held[]): Promise<void> => {
    if (Date.now() < resumeAt) return handBack(batch, 'paused');
    try {
      await ingestBatch(
        mesh,
        batch.map((h) => h.news),
      );
    } catch (err) {
      if (isStoreUnavailable(err)) return handBack(batch, err);
      if (batch.length === 1) {
        const { msg } = batch[0]!;
        stats.poison++;
        msg.term();
        mesh.logger.warn({ err: String(err), subject: msg.subject, bytes: msg.data.length }, 'news the store refuses was dropped');
        return;
      }
      const half = Math.ceil(batch.length / 2);
      await writeSplitting(batch.slice(0, half));
      await writeSplitting(batch.slice(half));
      return;
    }
    for (const held of batch) held.msg.ack();
    stats.ingested += batch.length;
    rate.add(batch.length);
    backoff = STORE_WAIT_FIRST_MS;
  };

  const write = () => {
    timer = undefined;
    const batch = pending.splice(0, NEWS_BATCH_MAX);
    if (batch.length === 0) {
      for (const resolve of idle.splice(0)) resolve();
      return;
    }
    stats.batches++;
    inWrite = batch;
    writing = inBatchSpan(
      'news batch',
      batch.map((h) => h.msg),
      () => writeSplitting(batch),
    )
      .catch((err) => mesh.logger.error({ err, messages: batch.length }, 'writing a batch of news failed'))
      .finally(() => {
        writing = undefined;
        inWrite = [];
        wake(); // the puller may wait for room
        if (pending.length) schedule();
        else for (const resolve of idle.splice(0)) resolve();
      });
  };

  const onMessage = (msg: JsMsg) => {
    if (!handedBack.delete(msg.seq)) stats.received++;
    // Heard when the stream stored it: news written after an outage keeps the instant it was sent.
    const heardAt = new Date(Math.min(Date.now(), msg.info.timestampNanos / 1e6));
    const news = judgeNews(mesh.subjects.root, msg.subject, msg.data, heardAt);
    if (news.type === 'malformed') {
      stats.malformed++;
      msg.term();
      malformed.note({ subject: msg.subject, reason: news.reason, bytes: msg.data.length });
      return;
    }
    pending.push({ news, msg, touchedAt: Date.now() });
    schedule();
  };

  const pull = async () => {
    while (!stopped) {
      const paused = resumeAt - Date.now();
      if (paused > 0) {
        await nap(paused);
        continue;
      }
      const room = heldMax() - pending.length - inWrite.length;
      if (room <= 0) {
        await nap(NEWS_PULL_RETRY_MS); // woken as soon as a batch is written
        continue;
      }
      try {
        fetching = await consumer.fetch({ max_messages: Math.min(NEWS_FETCH_MAX, room), expires: NEWS_FETCH_EXPIRES_MS });
        if (stopped) fetching.stop();
        for await (const msg of fetching) onMessage(msg);
      } catch (err) {
        if (stopped) break;
        mesh.logger.warn({ err: String(err), retryInMs: NEWS_PULL_RETRY_MS }, 'pulling news failed: trying again');
        await nap(NEWS_PULL_RETRY_MS);
      } finally {
        fetching = undefined;
      }
    }
  };
  const pulling = pull();

  // What is held longer than NEWS_WORKING_EVERY_MS is told to the stream as being worked on, so it
  // is not delivered again to another replica while this one writes it (a slow store); a replica
  // that froze or died stops telling, and its news goes to another after NEWS_ACK_WAIT_MS.
  const working = setInterval(() => {
    const due = Date.now() - NEWS_WORKING_EVERY_MS;
    for (const list of [inWrite, pending]) {
      for (const held of list) {
        if (held.touchedAt > due) continue;
        held.touchedAt = Date.now();
        held.msg.working();
      }
    }
  }, NEWS_WORKING_EVERY_MS);
  working.unref();

  const flush = () =>
    new Promise<void>((resolve) => {
      malformed.drain();
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
      stopped = true;
      clearInterval(working);
      fetching?.stop();
      wake();
      await pulling;
      resumeAt = 0;
      await flush();
      malformed.stop();
      if (timer) clearTimeout(timer);
      idle = [];
    },
  };
}

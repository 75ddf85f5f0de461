import type { JetStreamClient, JetStreamManager, JsMsg } from '@nats-io/jetstream';
import { NEWS_LEGACY_CONSUMER } from '../../bus/news-stream.js';
import type { Leases } from '../replicas/leases.js';
import type { IngestMesh } from './batch.js';
import { startCheckpointing } from './checkpoints.js';
import type { NewsHearing } from './hearing.js';
import { PARTITIONS_EVERY_MS, PARTITIONS_FENCE_MS, PARTITIONS_GONE_MS } from './limits.js';
import { malformedLog } from './malformed-log.js';
import { NewsReader } from './news-reader.js';
import { type NewsStats, NewsWriter } from './news-writer.js';
import { givePartitionsUp, NEWS_PARTITIONS, partitionOf, partitionOwners, recordPartitionsWritten, takePartitions } from './partitions.js';
import { judgeNews, type News } from './wire.js';

export interface NewsIngest {
  stats: NewsStats;
  /** The partitions this replica writes now. */
  partitions(): number[];
  /** Resolves once everything read so far is written (or dropped), its partitions' marks recorded and its checkpoint written; logs the malformed news counted and not yet logged. */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/** Where the ingest reads: the news stream, and the hearing whose follower reads it whole. */
export interface IngestSource {
  js: Pick<JetStreamClient, 'consumers'>;
  jsm: Pick<JetStreamManager, 'consumers' | 'streams'>;
  stream: string;
  hearing: Pick<NewsHearing, 'onNewsRead' | 'followedUpTo'>;
}

/** `partitions` grouped by their mark in `marks`: one statement records each group. */
function byMark(partitions: Iterable<number>, marks: readonly number[]): Map<number, number[]> {
  const groups = new Map<number, number[]>();
  for (const p of partitions) {
    const group = groups.get(marks[p]!);
    if (group) group.push(p);
    else groups.set(marks[p]!, [p]);
  }
  return groups;
}

/** Where a batch was cut: every message of `partitions` up to `through` is in it or in one before. */
interface Cut {
  through: number;
  partitions: number[];
}

/**
 * Writes this replica's share of the news (issue 37). The news is cut into NEWS_PARTITIONS by
 * subject; each partition is written by one live replica, chosen by rendezvous hashing over the
 * live leases and held in the store (`news_partition`). The replica's hearing follower reads the
 * whole stream anyway, so the ingest writes from its messages, its own partitions' only, judged
 * once: each message is received once per replica, not once more through a shared consumer. When
 * the ingest is behind the follower (a partition taken, written up to an earlier message; the
 * store away; more than it may hold), `NewsReader` reads the stream from where its partitions are
 * written until it catches up. Every PARTITIONS_EVERY_MS it records each partition's mark, so a
 * replica that takes a partition over (its owner gone or giving it up) starts from there.
 */
export function startNewsIngest(mesh: IngestMesh & { config: { replica: string }; leases: Pick<Leases, 'liveReplicas'> }, source: IngestSource): NewsIngest {
  const me = mesh.config.replica;
  const stats: NewsStats = { received: 0, ingested: 0, malformed: 0, poison: 0, redelivered: 0, batches: 0 };
  const malformed = malformedLog(mesh.logger);
  const checkpointing = startCheckpointing(mesh.db, mesh.hearing.owed, mesh.logger);
  const owned = new Set<number>();
  /** Per partition: every message up to this sequence is written (this replica's memory of it). */
  const written = new Array<number>(NEWS_PARTITIONS).fill(0);
  /** ...and the mark the store holds. */
  const recorded = new Array<number>(NEWS_PARTITIONS).fill(0);
  /** ...every message up to this one is written or held to be. */
  const queued = new Array<number>(NEWS_PARTITIONS).fill(0);
  /** ...the highest message ever read (so one read again is not counted received twice). */
  const seen = new Array<number>(NEWS_PARTITIONS).fill(0);
  /** The last message handled, from the reader or the follower: every message before it of an owned partition is held or written. */
  let through = 0;
  /** Whether the follower's messages are handled (else the reader is catching up). */
  let live = false;
  let reader: NewsReader | undefined;
  let stopped = false;
  const root = mesh.subjects.root;

  const writer = new NewsWriter<Cut>(mesh, stats, {
    cut(rest) {
      let upTo = through;
      for (const held of rest) upTo = Math.min(upTo, held.msg.seq - 1);
      return { through: upTo, partitions: [...owned] };
    },
    written(cut) {
      for (const p of cut.partitions) if (owned.has(p)) written[p] = Math.max(written[p]!, cut.through);
    },
    storeAway() {
      // What was held is dropped: read again from what is written, once the pause is over.
      for (const p of owned) queued[p] = written[p]!;
      readFrom(lowestWritten() + 1);
    },
    afterBatch: () => reader?.wake(),
    async fence() {
      if (Date.now() - recordedAt > PARTITIONS_FENCE_MS) await record(true);
    },
    owns: (p) => owned.has(p),
  });

  const lowestWritten = () => {
    let lowest = Number.POSITIVE_INFINITY;
    for (const p of owned) lowest = Math.min(lowest, written[p]!);
    return Number.isFinite(lowest) ? lowest : through;
  };

  /** Takes one message in order: held for writing when it is of an owned partition and not yet held. */
  const handle = (msg: JsMsg, judged: News | undefined, p = partitionOf(msg.subject)) => {
    through = msg.seq;
    if (!owned.has(p) || msg.seq <= queued[p]!) return;
    queued[p] = msg.seq;
    const first = msg.seq > seen[p]!;
    if (first) {
      seen[p] = msg.seq;
      stats.received++;
    }
    const news = judged ?? judgeNews(root, msg.subject, msg.data, new Date(Math.min(Date.now(), msg.info.timestampNanos / 1e6)));
    if (news.type === 'malformed') {
      if (!first) return;
      stats.malformed++;
      malformed.note({ subject: msg.subject, reason: news.reason, bytes: msg.data.length });
      return;
    }
    writer.add({ news, msg, partition: p });
  };

  const followerSeq = () => source.hearing.followedUpTo()?.seq ?? 0;

  /** Reads the stream from `from` until caught up with the follower; meanwhile the follower's messages wait for it. */
  const readFrom = (from: number) => {
    live = false;
    through = from - 1;
    const previous = reader;
    const caughtUp = () => {
      if (through < followerSeq()) return false;
      live = true;
      return true;
    };
    const next: NewsReader = new NewsReader(
      { js: source.js, stream: source.stream, logger: mesh.logger },
      from,
      writer,
      (msg): boolean => {
        if (reader !== next) return true;
        handle(msg, undefined);
        return caughtUp();
      },
      () => reader === next && caughtUp(),
    );
    reader = next;
    void previous?.stop();
    void next.done.then(() => {
      if (reader === next) reader = undefined;
    });
  };

  const unfollow = source.hearing.onNewsRead((msg, news) => {
    if (!live || stopped || msg.seq <= through) return;
    // A message missed (the stream's limits removed it before it was read): read from where this one is.
    if (msg.seq !== through + 1) return readFrom(through + 1);
    const p = partitionOf(msg.subject);
    if (owned.has(p) && msg.seq > queued[p]! && (writer.room() <= 0 || writer.pausedFor() > 0)) return readFrom(msg.seq);
    handle(msg, news, p);
  });

  let failing = false;
  /** When the marks were last recorded (Date.now()). */
  let recordedAt = Date.now();
  /** Records the marks that moved, learning which partitions another replica took meanwhile (this one was thought gone). */
  const record = async (fencing = false) => {
    if (writer.isIdle()) for (const p of owned) written[p] = Math.max(written[p]!, through);
    // Before a batch (`fence`), unrecorded this long, every partition is recorded, moved or not: which are still this replica's is learnt.
    const verify = fencing && Date.now() - recordedAt > PARTITIONS_FENCE_MS;
    const startedAt = Date.now();
    const ownedBefore = owned.size;
    const asked = [...owned].filter((p) => verify || written[p]! > recorded[p]!);
    for (const [mark, partitions] of byMark(asked, written)) {
      const still = new Set(await recordPartitionsWritten(mesh.db, me, partitions, mark));
      for (const p of partitions) if (still.has(p)) recorded[p] = mark;
      const lost = partitions.filter((p) => !still.has(p) && owned.has(p));
      if (lost.length) {
        for (const p of lost) owned.delete(p);
        writer.dropPartitions(new Set(lost));
        mesh.logger.warn({ partitions: lost }, 'news partitions were taken by another replica while this one was thought gone: no longer writing them');
      }
    }
    // Every owned partition was recorded, so each is known still this replica's (a partition not moved was not asked).
    if (asked.length === ownedBefore) recordedAt = startedAt;
  };

  /** Gives up `partitions` once the batch being written is done, dropping what is held of them: their next owner reads it. */
  const giveUp = async (partitions: number[]) => {
    await writer.betweenBatches();
    for (const p of partitions) owned.delete(p);
    writer.dropPartitions(new Set(partitions));
    if (writer.isIdle()) for (const p of partitions) written[p] = Math.max(written[p]!, through);
    for (const [mark, ps] of byMark(partitions, written)) await givePartitionsUp(mesh.db, me, ps, mark);
  };

  /** Where a partition never written starts: where the consumer of gateways before partitions had acknowledged, else the stream's first message. */
  const neverWritten = (async () => {
    const legacy = await source.jsm.consumers.info(source.stream, NEWS_LEGACY_CONSUMER).catch(() => undefined);
    if (legacy) return legacy.ack_floor.stream_seq;
    return Math.max(0, (await source.jsm.streams.info(source.stream)).state.first_seq - 1);
  })();
  neverWritten.catch(() => undefined);

  /**
   * When each replica was last seen alive by this one, while it ran: an owner is taken from only once
   * gone for PARTITIONS_GONE_MS. A replica woken from a freeze reads a view of the leases as stale
   * as its freeze (every other lease lapsed in it) until the bucket's updates reach it: after a
   * pause every replica counts as seen now, so it takes nothing from the living meanwhile.
   */
  const seenAlive = new Map<string, number>();
  const notGone = (replicas: readonly string[]) => {
    const now = Date.now();
    for (const r of replicas) seenAlive.set(r, now);
    return [...seenAlive].filter(([, at]) => now - at < PARTITIONS_GONE_MS).map(([r]) => r);
  };

  const share = async () => {
    await record();
    const replicas = mesh.leases.liveReplicas();
    const owners = partitionOwners(replicas.includes(me) ? replicas : [...replicas, me]);
    const leaving = [...owned].filter((p) => owners[p] !== me);
    if (leaving.length) {
      await giveUp(leaving);
      mesh.logger.info({ partitions: leaving.length, replicas: replicas.length }, 'news partitions given up to another replica');
    }
    const wanted = owners.flatMap((owner, p) => (owner === me && !owned.has(p) ? [p] : []));
    const taken = await takePartitions(mesh.db, me, wanted, notGone(replicas), await neverWritten);
    if (stopped || taken.length === 0) return;
    let from = Number.POSITIVE_INFINITY;
    for (const { partition: p, writtenSeq } of taken) {
      owned.add(p);
      written[p] = recorded[p] = queued[p] = writtenSeq;
      seen[p] = Math.max(seen[p]!, writtenSeq);
      if (writtenSeq < through) from = Math.min(from, writtenSeq + 1);
    }
    mesh.logger.info({ partitions: taken.length, owned: owned.size, from: Number.isFinite(from) ? from : through + 1 }, 'news partitions taken');
    // Taken partitions written up to a message before where this replica got: read again from the earliest.
    if (Number.isFinite(from)) readFrom(from);
  };

  let sharing: Promise<void> = Promise.resolve();
  const shareNow = () =>
    (sharing = sharing.then(share).then(
      () => {
        if (failing) mesh.logger.info('news partitions recorded again');
        failing = false;
      },
      (err) => {
        if (!failing) mesh.logger.warn({ err: String(err) }, 'news partitions could not be recorded or shared: trying again');
        failing = true;
      },
    ));
  // The first read: from the follower's position (nothing owned yet), caught up at once.
  readFrom(followerSeq() + 1);
  void shareNow();
  // A round still under way (a slow store) is not queued behind: rounds do not pile up.
  let roundUnderWay = false;
  let tickAt = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    // Paused (frozen, starved): what this replica saw of the others' leases is as old as the pause.
    if (now - tickAt > 3 * PARTITIONS_EVERY_MS) for (const r of seenAlive.keys()) seenAlive.set(r, now);
    tickAt = now;
    if (roundUnderWay) return;
    roundUnderWay = true;
    void shareNow().finally(() => {
      roundUnderWay = false;
    });
  }, PARTITIONS_EVERY_MS);
  timer.unref();

  return {
    stats,
    partitions: () => [...owned].sort((a, b) => a - b),
    async flush() {
      malformed.drain();
      await writer.flush();
      await shareNow();
      await checkpointing.flush();
    },
    async stop() {
      clearInterval(timer);
      unfollow();
      await reader?.stop();
      malformed.drain();
      await writer.stop();
      await sharing;
      stopped = true;
      // Given up at once, written up to where this replica got: the next owner need not wait for the lease to lapse.
      await giveUp([...owned]).catch((err) =>
        mesh.logger.warn({ err: String(err) }, 'news partitions could not be given up: they move when this lease lapses'),
      );
      await checkpointing.stop();
      malformed.stop();
    },
  };
}

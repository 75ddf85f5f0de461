import type { JetStreamManager, JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { DeafSpan } from '../machines/machines.js';
import { CheckpointsOwed } from './checkpoints.js';
import { gatherHeardLater } from './heard-later.js';
import { HeardMachines } from './heard-machines.js';
import { type FollowedUpTo, type FollowSource, followHearing, type HearingFollower } from './hearing-follower.js';
import { type HearingShare, type ShareLink, startHearingShare } from './hearing-share.js';
import { NEWS_PARTITIONS } from './partitions.js';
import type { News } from './wire.js';

/** Every replica reads how far the news is written this often: the lag on /metrics, and a composer behind learns it caught up. */
export const HEARING_POLL_MS = 500;
/** Deaf spans are kept this long after they end: past it no machine's state can still depend on one. */
const DEAF_KEPT_MS = 60 * 60_000;
/** ...and at most this many (a flapping connection keeps the newest). */
const DEAF_SPANS_MAX = 32;
/** A read of the watermark that takes longer than this is given up: the last one known stands (NATS away is lag, not silence). */
export const HEARING_READ_TIMEOUT_MS = 2_000;

/**
 * How far the mesh's news is heard and written. Heard: with the follower, how far this replica has
 * read the news stream, every beat before it noted in memory. Written: from the store, the lowest
 * of the partitions' marks (`newsWrittenThrough`): everything stored before the message after it
 * is written, whichever replica wrote it.
 */
interface Heard {
  /**
   * States are judged at this instant: how far this replica's follower has read the news (every
   * beat stored before it is in memory, written or not); without a follower, `writtenUntilMs`.
   */
  heardUntilMs: number;
  /** News stored before this instant is written: reports count once written, so the apply time-out is judged here. */
  writtenUntilMs: number;
  /** Messages stored and not yet written, or not yet heard by this replica (the larger). */
  pending: number;
  /** When this was read (this replica's clock). */
  readAtMs: number;
  /** The times this replica's NATS connection was down, oldest first: beats sent then may be lost, so they are not silence. */
  deaf: readonly DeafSpan[];
  /** When each machine was last heard, as this replica's memory holds it up to `heardUntilMs` and past it (issue 37). */
  machines: HeardMachines;
}

export interface NewsHearing {
  /** The last watermark read; before the first read, the instant the gateway started (nothing heard before it counts as silence). */
  current(): Heard;
  /** When each machine was last heard, kept in memory: every reader of last-heard takes the later of it and the store's checkpoint. */
  machines: HeardMachines;
  /** What this replica's ingest took in without writing, owed to the store's checkpoint (`startCheckpointing` writes it). */
  owed: CheckpointsOwed;
  /** Reads the watermark now (reads asked while one is under way share it); the last known one when NATS does not answer in time. */
  refresh(): Promise<Heard>;
  /** How far the oldest news not yet heard or not yet written is behind this replica's clock, in ms; 0 when caught up. */
  lagMs(): number;
  /** Called after each read with the watermark. Returns the unsubscribe. */
  onRead(listener: (heard: Heard) => void): () => void;
  /**
   * Called with every message the follower reads once its start's re-read is over, in stream order,
   * with its news when the follower judged it: the ingest writes its partitions from here. Returns the unsubscribe.
   */
  onNewsRead(listener: (msg: JsMsg, news: News | undefined) => void): () => void;
  /** How far the follower has read the stream; undefined before it has caught up with its start (or without one). */
  followedUpTo(): FollowedUpTo | undefined;
  /**
   * Called with the machines whose last-heard moved later in memory (the follower's beats and the
   * ingest's), gathered `HEARD_GATHER_MS` (`heard-later.ts`): the composer judges them again from memory, with no read
   * of the store (a beat that changes nothing stored is news only of the instant). With `wanted`,
   * machines are gathered for it only while it answers true (the composer: while serving). Returns the unsubscribe.
   */
  onHeard(listener: (machines: readonly string[]) => void, wanted?: () => boolean): () => void;
  /** The partitions of the news this replica's follower judges now (every one without a share, or before it starts). */
  judged(): readonly number[];
  /** Beats sent to the other replicas in shares, taken from theirs, and shares refused (`hearing-share.ts`). */
  shared(): { sent: number; taken: number; refused: number };
  /**
   * Tells the hearing that states judged at `heardUntilMs` were shown in a composition composed at
   * `composedAtMs` (by any replica): a deaf span not over by then never reaches back past that
   * instant (`shownStates`), so it cannot undo a state already shown.
   */
  shown(heardUntilMs: number, composedAtMs: number): void;
  stop(): void;
}

/** What the watermarks are read from: the news stream, and the store's marks of what is written. */
export interface HearingSource {
  jsm: Pick<JetStreamManager, 'streams'>;
  /** The connection whose losses are deaf spans; absent, none are kept. */
  nc?: Pick<NatsConnection, 'status'>;
  stream: string;
  logger?: Logger;
  /** The stream sequence up to which every partition of the news is written (`newsWrittenThrough`); absent, news heard counts as written. */
  writtenThrough?: () => Promise<number | undefined>;
  /**
   * Follow the stream for hearing (`followHearing`): every beat noted in memory and the watermark
   * never past what is read. Absent (a test's source), memory holds what this replica's ingest wrote.
   */
  follow?: Pick<FollowSource, 'js' | 'root' | 'replayMs'>;
  /** MESH_CHECKPOINT_S in ms: the period over which what is owed to the store is spread. */
  checkpointMs?: number;
  /** With a follower: the hearing shared among the replicas by partition (`hearing-share.ts`); absent, this replica judges every message. */
  share?: Omit<ShareLink, 'logger'>;
}

const timeout = (ms: number) =>
  new Promise<never>((_, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    t.unref();
  });

/**
 * Reads both watermarks once, from NATS only. The instant is taken before the stream is asked, so
 * it is never past what the answer covers. Heard: the follower has read the stream's last message,
 * that instant; else the stream time of the last message it read (without a follower, the instant
 * asked). Written: every partition written up to the stream's last message (as `marks` last read
 * them from the store), that instant; else the stream time of the first message not written bounds it.
 */
async function readHeard(
  source: HearingSource,
  previous: Pick<Heard, 'writtenUntilMs'>,
  marks: WrittenMarks,
  followed?: () => FollowedUpTo,
): Promise<Omit<Heard, 'deaf' | 'machines'> & { heardSeq: number }> {
  const askedAt = Date.now();
  const lastSeq = (await source.jsm.streams.info(source.stream)).state.last_seq;
  const behind = followed ? Math.max(0, lastSeq - followed().seq) : 0;
  const heardUntilMs = !followed || behind === 0 ? askedAt : followed().storedMs - 1;
  const writtenSeq = marks.seq(lastSeq);
  const unwritten = Math.max(0, lastSeq - writtenSeq);
  const writtenUntilMs = unwritten === 0 ? askedAt : await storedBefore(source, writtenSeq + 1, previous.writtenUntilMs);
  const heardSeq = !followed || behind === 0 ? lastSeq : followed().seq;
  return { heardUntilMs, heardSeq, writtenUntilMs: Math.min(askedAt, writtenUntilMs), pending: Math.max(unwritten, behind), readAtMs: Date.now() };
}

/** The stream sequence every partition is written up to, as last read from the store. */
interface WrittenMarks {
  /** The last known (without a source of it, `lastSeq`: heard counts as written); asks the store again, in the background, when the stream holds news past it. */
  seq(lastSeq: number): number;
}

/**
 * Reads the lowest partition mark (`source.writtenThrough`) in the background, one read at a time,
 * and only when the stream holds news past the last one read: a quiet mesh asks the store nothing,
 * and a store slow to answer (busy with the news, or away) never holds the heard watermark back,
 * which is read from NATS alone (a bad day at 100,000 machines showed SILENT 12 s late when it did).
 */
function writtenMarks(source: HearingSource): WrittenMarks {
  let known = 0;
  let reading = false;
  return {
    seq(lastSeq) {
      const read = source.writtenThrough;
      if (!read) return lastSeq;
      if (lastSeq > known && !reading) {
        reading = true;
        void read()
          .then(
            (seq) => {
              if (seq !== undefined) known = Math.max(known, seq);
            },
            () => undefined,
          )
          .finally(() => {
            reading = false;
          });
      }
      return known;
    },
  };
}

/** Just before the stream stored message `seq` (the oldest kept, when the stream's limits removed it); `previousMs` when neither is found. */
async function storedBefore(source: HearingSource, seq: number, previousMs: number): Promise<number> {
  let stored = await source.jsm.streams.getMessage(source.stream, { seq }).catch(() => undefined);
  if (!stored) {
    const first = (await source.jsm.streams.info(source.stream)).state.first_seq;
    if (first > seq) stored = await source.jsm.streams.getMessage(source.stream, { seq: first }).catch(() => undefined);
  }
  // Nothing found to bound it: the instant known before stands, never one later.
  return stored ? Date.parse(stored.timestamp) - 1 : previousMs;
}

/**
 * A deaf span, given that states judged at `heardUntilMs` were shown by a composition composed at
 * `composedAtMs`: when that composition was made before the span ended, whoever made it could hear
 * past that instant, and states were shown judged there without the span, so the span starts no
 * earlier (a replica frozen, or too busy to read, learns of an outage long after its last read).
 */
export function shownStates(span: DeafSpan, heardUntilMs: number, composedAtMs: number): DeafSpan {
  if (composedAtMs > span.toMs || heardUntilMs <= span.fromMs) return span;
  return { fromMs: Math.min(heardUntilMs, span.toMs), toMs: span.toMs };
}

/** The spans this replica's NATS connection was down, as `startNewsHearing` keeps them. */
interface DeafSpans {
  now(): DeafSpan[];
  shown(heardUntilMs: number, composedAtMs: number): void;
  stop(): void;
}

/**
 * A lost connection is a deaf span from the last read that answered (`readAtMs`) to the
 * reconnection, never reaching back past a state already shown (`shown`); `changed` is told of each.
 */
function deafSpans(source: HearingSource, readAtMs: () => number, changed: () => void): DeafSpans {
  let deaf: DeafSpan[] = [];
  let deafSince: number | undefined;
  const statuses = source.nc?.status() as (AsyncIterable<{ type: string }> & { stop?(): void }) | undefined;
  if (statuses) {
    (async () => {
      for await (const status of statuses) {
        if (status.type === 'disconnect' && deafSince === undefined) deafSince = Math.min(readAtMs(), Date.now());
        else if (status.type === 'reconnect' && deafSince !== undefined) {
          const now = Date.now();
          deaf = [...deaf.filter((d) => d.toMs > now - DEAF_KEPT_MS), { fromMs: deafSince, toMs: now }].slice(-DEAF_SPANS_MAX);
          source.logger?.warn({ deafMs: now - deafSince }, "NATS was away: beats sent meanwhile may be lost, so that time is not counted as machines' silence");
          deafSince = undefined;
          changed();
        }
      }
    })().catch(() => undefined);
  }
  return {
    now: () => (deafSince === undefined ? deaf : [...deaf, { fromMs: deafSince, toMs: Number.POSITIVE_INFINITY }]),
    shown(heardUntilMs, composedAtMs) {
      if (!Number.isFinite(heardUntilMs) || !Number.isFinite(composedAtMs)) return;
      deaf = deaf.map((span) => shownStates(span, heardUntilMs, composedAtMs));
      if (deafSince !== undefined) deafSince = shownStates({ fromMs: deafSince, toMs: Number.POSITIVE_INFINITY }, heardUntilMs, composedAtMs).fromMs;
      changed();
    },
    stop: () => statuses?.stop?.(),
  };
}

/** The checkpoint period of a hearing whose source names none (a test's): MESH_CHECKPOINT_S's default. */
const CHECKPOINT_DEFAULT_MS = 300_000;

/** A follower that could not start (NATS away) is tried again this much later; meanwhile the watermark stays where the replay starts. */
const FOLLOW_RETRY_MS = 1_000;

/**
 * Starts the hearing follower (`followHearing`), trying again until NATS answers; resolves once it
 * has read what the stream held when it started. Absent `follow`, resolves at once with none.
 */
async function startFollowing(
  source: HearingSource,
  machines: HeardMachines,
  isStopped: () => boolean,
  how: Pick<FollowSource, 'onRead' | 'judges' | 'onBeat'>,
): Promise<HearingFollower | undefined> {
  if (!source.follow) return undefined;
  for (;;) {
    try {
      const follower = await followHearing({ ...source.follow, jsm: source.jsm, stream: source.stream, logger: source.logger, ...how }, machines);
      await follower.caughtUp;
      return follower;
    } catch (err) {
      if (isStopped()) return undefined;
      source.logger?.warn({ err: String(err), retryInMs: FOLLOW_RETRY_MS }, 'following the news stream for hearing could not start: trying again');
      await new Promise((resolve) => setTimeout(resolve, FOLLOW_RETRY_MS));
    }
  }
}

/**
 * Keeps this replica's reading of how far the news is heard and written (`readHeard`), every
 * HEARING_POLL_MS and whenever asked. With `source.follow`, states are judged at what this
 * replica's follower has read (its first read waits until the follower has re-read the stream's
 * recent window): every beat before it is in memory, so neither a replica writing alone nor one that
 * died holding unwritten news holds the states back. What is written, the partitions' marks in the
 * store (`source.writtenThrough`), bounds what waits for the store: the apply time-out (reports
 * count once written), and the lag. Without a follower (a test's source) states are judged at what is written.
 */
export function startNewsHearing(source: HearingSource, startedAtMs = Date.now()): NewsHearing {
  const machines = new HeardMachines();
  const owed = new CheckpointsOwed(source.checkpointMs ?? CHECKPOINT_DEFAULT_MS);
  let heard: Heard = { heardUntilMs: startedAtMs, writtenUntilMs: startedAtMs, pending: 0, readAtMs: startedAtMs, deaf: [], machines };
  const deaf = deafSpans(
    source,
    () => heard.readAtMs,
    () => (heard = { ...heard, deaf: deaf.now() }),
  );
  let reading: Promise<Heard> | undefined;
  let failing = false;
  let stopped = false;
  let follower: HearingFollower | undefined;
  const newsReaders = new Set<(msg: JsMsg, news: News | undefined) => void>();
  const onNewsRead = (msg: JsMsg, news: News | undefined) => {
    for (const reader of newsReaders) reader(msg, news);
  };
  /** The hearing shared with the other replicas, once the follower has caught up (its first read starts it). */
  let share: HearingShare | undefined;
  /** How far this replica's own follower has heard, at the last read: states wait for the partitions heard in shares. */
  let ownHeardMs = startedAtMs;
  const following = startFollowing(source, machines, () => stopped, {
    onRead: onNewsRead,
    judges: (p) => !share || share.judges(p),
    onBeat: (machine, atMs, takenMs) => share?.beat(machine, atMs, takenMs),
  }).then((f) => {
    follower = f;
    if (stopped) f?.stop();
  });
  const listeners = new Set<(heard: Heard) => void>();
  const marks = writtenMarks(source);
  const heardLater = gatherHeardLater(machines);

  /** A share moved how far every partition is heard: states are judged there at once, not at the next read (up to HEARING_POLL_MS later). */
  const heardFurther = () => {
    const until = share?.heardUntilMs() ?? heard.heardUntilMs;
    if (stopped || until <= heard.heardUntilMs) return;
    heard = { ...heard, heardUntilMs: until };
    for (const listener of listeners) listener(heard);
  };

  const read = () =>
    Promise.race([readHeard(source, heard, marks, follower && (() => follower!.upTo())), timeout(HEARING_READ_TIMEOUT_MS)])
      .then(({ heardSeq, ...read }) => {
        ownHeardMs = read.heardUntilMs;
        if (follower && source.share && !stopped) {
          const own = { seq: heardSeq, ms: read.heardUntilMs };
          share ??= startHearingShare(
            { ...source.share, logger: source.logger },
            machines,
            own,
            { at: () => follower!.upTo().seq, rehear: (afterSeq, partitions) => follower!.rehear(afterSeq, partitions) },
            heardFurther,
          );
          share.ownRead(own);
          read.heardUntilMs = share.heardUntilMs();
        }
        heard = { ...read, deaf: deaf.now(), machines };
        if (failing) source.logger?.info({ pending: read.pending }, 'the news stream answers again: judging states at what is heard');
        failing = false;
        for (const listener of listeners) listener(heard);
        return heard;
      })
      .catch((err) => {
        if (!failing && !stopped)
          source.logger?.warn({ err: String(err) }, 'how far the news is heard and written could not be read: states stay judged at the last instant known');
        failing = true;
        return heard;
      });
  const refresh = (): Promise<Heard> =>
    (reading ??= following.then(read).finally(() => {
      reading = undefined;
    }));

  const timer = setInterval(() => void refresh(), HEARING_POLL_MS);
  timer.unref();
  void refresh();

  return {
    current: () => heard,
    machines,
    owed,
    refresh,
    lagMs: () =>
      heard.pending === 0 && !failing && heard.heardUntilMs >= ownHeardMs ? 0 : Math.max(0, Date.now() - Math.min(heard.heardUntilMs, heard.writtenUntilMs)),
    shown: deaf.shown,
    onRead(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    onHeard: heardLater.listen,
    judged: () => share?.judged() ?? Array.from({ length: NEWS_PARTITIONS }, (_, p) => p),
    shared: () => share?.stats() ?? { sent: 0, taken: 0, refused: 0 },
    onNewsRead(reader) {
      newsReaders.add(reader);
      return () => newsReaders.delete(reader);
    },
    followedUpTo: () => follower?.upTo(),
    stop() {
      stopped = true;
      share?.stop();
      heardLater.stop();
      clearInterval(timer);
      follower?.stop();
      deaf.stop();
      listeners.clear();
      newsReaders.clear();
    },
  };
}

import { type Consumer, type ConsumerMessages, DeliverPolicy, type JetStreamClient, type JetStreamManager, type JsMsg } from '@nats-io/jetstream';
import { TimeoutError } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { SILENT_AFTER_INTERVALS } from '../machines/machines.js';
import type { HeardMachines } from './heard-machines.js';
import { partitionOf } from './partitions.js';
import { judgeNews, type News } from './wire.js';

/** A start re-reads the SILENT threshold of news and this many expected beats more. */
const REPLAY_MARGIN_INTERVALS = 1;

/**
 * How far back a start re-reads the news stream: a machine with no beat in it is SILENT whatever
 * the store's checkpoint says, so its checkpoint (never later than the truth) cannot raise it.
 */
export const hearingReplayMs = (heartbeatSeconds: number): number => (SILENT_AFTER_INTERVALS + REPLAY_MARGIN_INTERVALS) * heartbeatSeconds * 1000;

/** Where the follower reads: the news stream, its subjects' root, and how far back a start re-reads. */
export interface FollowSource {
  js: Pick<JetStreamClient, 'consumers'>;
  jsm: Pick<JetStreamManager, 'streams'>;
  stream: string;
  root: string;
  /** A start re-reads the news stored this long before it (the SILENT threshold and a beat more). */
  replayMs: number;
  logger?: Logger;
  /** A start reads the last message of each machine only with at most this many subjects stored; else the window by time (`LAST_PER_SUBJECT_SUBJECTS_AT_MOST`). */
  lastPerSubjectAtMost?: number;
  /**
   * Told of every message read once the start's re-read is over, in stream order, with its news when
   * the follower judged it (a machine's): the ingest writes its partitions' news from here (issue 37).
   */
  onRead?: (msg: JsMsg, news: News | undefined) => void;
  /**
   * Once the start's re-read is over, whether this replica judges a partition's messages: those it
   * does not are read and passed on unjudged, their beats heard from the replica that judges them
   * (`hearing-share.ts`). Absent, every message is judged.
   */
  judges?: (partition: number) => boolean;
  /** Told of each beat the follower notes once the start's re-read is over (the share sends them to the other replicas). */
  onBeat?: (machine: string, atMs: number, takenMs: number) => void;
}

/**
 * A start reads the last message of each machine only while the news stream holds at most this many
 * subjects; past it, every message of the window by time. NATS 2.9 makes a `last_per_subject`
 * consumer while it holds the stream: no publish is stored until it is made, for a time that grows
 * with the stream (0.8 s at 100,000 machines' 700,000 messages, 3.9 s at 300,000's 2.1 million, past
 * the client's time-out; 20–24 s at a million, where the stream took nothing for minutes:
 * docs/BENCHMARKS.md). A read by time is made at once and delivered as any consumer's.
 */
export const LAST_PER_SUBJECT_SUBJECTS_AT_MOST = 150_000;

/** The follower asks for this many messages at a time (the client's default is 100: too few for a replay of thousands a second). */
const FOLLOW_BUFFER_MESSAGES = 5_000;

/** A follow that ended (NATS restarted and lost its consumer) is started again this much later. */
const FOLLOW_AGAIN_MS = 500;

/** A follow that read nothing this long while the stream holds more is followed again (see `followHearing`). */
const FOLLOW_STALL_MS = 3_000;

/** How far the follower has read the news stream. */
export interface FollowedUpTo {
  /** The stream sequence of the last message read; 0 before the first. */
  seq: number;
  /** When the stream stored it (ms); the instant the follower started from before the first. */
  storedMs: number;
}

export interface HearingFollower {
  upTo(): FollowedUpTo;
  /** Resolves once the follower has read every message the stream held when it started. */
  caughtUp: Promise<void>;
  /**
   * Reads the stream again after message `afterSeq` up to the one the follower is at now, noting the
   * beats of `partitions` only (partitions this replica took to judge, heard before from another
   * replica up to `afterSeq`). Resolves with whether it read them all.
   */
  rehear(afterSeq: number, partitions: ReadonlySet<number>): Promise<boolean>;
  stop(): void;
}

/** What the follower's parts share: how far it read, the messages being read, whether it stopped. */
interface Following {
  upTo: FollowedUpTo;
  messages: ConsumerMessages | undefined;
  stopped: boolean;
}

type OpenFrom = { deliver_policy: DeliverPolicy; opt_start_time?: string; opt_start_seq?: number; filter_subjects?: string };

/** A machine whose last message in the re-read was not a heartbeat (a report, junk): its last beat lies before that message. */
interface BeatHidden {
  seq: number;
  storedMs: number;
}

/**
 * Follows the news stream on this replica, whichever replica's ingest writes each message: every
 * heartbeat it holds is noted in `heard` at the instant the stream stored it (issue 37: the news
 * stream is the log of hearing; the store keeps a checkpoint). An ordered consumer of this replica's
 * own. A replica that starts or takes over rebuilds the last SILENT threshold of hearing from the
 * stream, the rest from the store's checkpoint. On a stream of at most
 * LAST_PER_SUBJECT_SUBJECTS_AT_MOST subjects it reads only the last message of each machine
 * (`last_per_subject`, NATS 2.9) — at 100,000 machines beating every 10 s a seventh of the window's
 * messages — then, for the machines whose last message was not a heartbeat, the window again for
 * their beats (`rereadHiddenBeats`); on a larger one, every message of the window by time. Ordered
 * consumers are made again by the client at the next sequence after NATS comes back.
 */
export async function followHearing(source: FollowSource, heard: HeardMachines): Promise<HearingFollower> {
  const startedMs = Date.now();
  const fromMs = startedMs - source.replayMs;
  // The ordered consumer read from: deleted at the stop, not left on the server for its inactive
  // threshold (5 min) with the whole stream counted as pending.
  const opened: { consumer?: Consumer } = {};
  const open = async (from: OpenFrom) => {
    const consumer = await source.js.consumers.get(source.stream, from);
    opened.consumer = consumer;
    return consumer.consume({ max_messages: FOLLOW_BUFFER_MESSAGES });
  };
  // How many subjects the stream holds decides how the start reads it (LAST_PER_SUBJECT_SUBJECTS_AT_MOST).
  const before = await source.jsm.streams.info(source.stream);
  let lastOfEachRead = (before.state.num_subjects ?? 0) <= (source.lastPerSubjectAtMost ?? LAST_PER_SUBJECT_SUBJECTS_AT_MOST);
  const byTime: OpenFrom = { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(fromMs).toISOString() };
  const messages = lastOfEachRead
    ? await open({ deliver_policy: DeliverPolicy.LastPerSubject, filter_subjects: `${source.root}.news.>` }).catch((err: Error) => {
        // NATS did not make it in the client's time (a stream grown, a server slow): asking again would hold the stream again.
        if (!(err instanceof TimeoutError)) throw err;
        source.logger?.warn({ subjects: before.state.num_subjects }, 'asking for the last message of each machine timed out: reading the window by time');
        lastOfEachRead = false;
        return open(byTime);
      })
    : await open(byTime);
  // Read once the consumer is made: every message it delivers first is at or before this sequence.
  const state = await source.jsm.streams.info(source.stream).then(
    (info) => info.state,
    (err) => {
      messages.stop();
      throw err;
    },
  );
  const target = state.last_ts && Date.parse(state.last_ts) >= fromMs ? state.last_seq : 0;
  // Nothing stored since `fromMs` (every agent stopped a while ago): the follower has all the stream
  // holds before it, so it starts as having read its last message, not as 0 — else every message
  // ever stored would count as news not yet read, and the gateway would judge as of the last one.
  const following: Following = { upTo: { seq: target === 0 ? state.last_seq : 0, storedMs: fromMs }, messages, stopped: false };
  let reached: () => void = () => undefined;
  const caughtUp = target === 0 ? Promise.resolve() : new Promise<void>((resolve) => (reached = resolve));
  const machineSubjects = `${source.root}.news.machine.`;
  const hidden = new Map<string, BeatHidden>();
  let replaying = target !== 0;
  let reread = 0;
  const replayed = () => {
    replaying = false;
    const stillHidden = [...hidden].filter(([machine, at]) => (heard.lastMs(machine) ?? Number.NEGATIVE_INFINITY) < at.storedMs);
    hidden.clear();
    void rereadHiddenBeats(source, heard, fromMs, stillHidden).then((rereadBeforeReports) => {
      source.logger?.info(
        lastOfEachRead
          ? { lastOfEach: reread, machinesWithReportLast: stillHidden.length, reread: rereadBeforeReports, ms: Date.now() - startedMs }
          : { window: reread, subjects: before.state.num_subjects, ms: Date.now() - startedMs },
        lastOfEachRead
          ? 'hearing rebuilt from the news stream: the last message of each machine, and the beats before a report'
          : 'hearing rebuilt from the news stream: every message of the window, the stream holding too many subjects to ask for the last of each',
      );
      reached();
    });
  };
  const read = async (from: ConsumerMessages) => {
    for await (const msg of from) {
      const storedMs = msg.info.timestampNanos / 1e6;
      // Older than the window (a last message of long ago): that machine is SILENT whatever it said.
      // Live, a partition another replica judges is passed on unjudged: its beats come in that replica's share.
      const judged = storedMs >= fromMs && msg.subject.startsWith(machineSubjects) && (replaying || !source.judges || source.judges(partitionOf(msg.subject)));
      const news = judged ? noteBeat(source.root, heard, msg, replaying ? undefined : source.onBeat) : undefined;
      // Read by time, every beat of the window comes: none is hidden behind a later report.
      if (news && news.type !== 'heartbeat' && replaying && lastOfEachRead) hidden.set(msg.subject.slice(machineSubjects.length), { seq: msg.seq, storedMs });
      following.upTo = { seq: msg.seq, storedMs };
      if (replaying) {
        reread++;
        if (msg.seq >= target) replayed();
      } else source.onRead?.(msg, news);
    }
  };
  followAgainWhenEnded(source, following, { open, read, fromMs }).catch((err) => source.logger?.error({ err }, 'following the news stream for hearing failed'));
  const watchdog = restartWhenStalled(source, following);
  return {
    upTo: () => following.upTo,
    caughtUp,
    rehear: (afterSeq, partitions) =>
      rereadBeats(source, heard, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: afterSeq + 1 }, following.upTo.seq, {
        wanted: (subject) => partitions.has(partitionOf(subject)),
        onBeat: source.onBeat,
        what: 'the beats of partitions taken to judge',
      }).then(({ complete }) => complete),
    stop() {
      following.stopped = true;
      clearInterval(watchdog);
      const messages = following.messages;
      following.messages = undefined;
      messages?.stop();
      // Once the messages are closed: a reset under way (the client's own) has made its consumer by then.
      void (messages?.closed() ?? Promise.resolve()).then(() => opened.consumer?.delete()).catch(() => undefined);
    },
  };
}

/** Judges a machine's message, heard when the stream stored it, and notes it in `heard` (and tells `onBeat`) when it is a heartbeat; returns the news. */
function noteBeat(root: string, heard: HeardMachines, msg: Pick<JsMsg, 'subject' | 'data' | 'info'>, onBeat?: FollowSource['onBeat']): News {
  const storedMs = msg.info.timestampNanos / 1e6;
  const heardAt = new Date(Math.min(Date.now(), storedMs));
  const news = judgeNews(root, msg.subject, msg.data, heardAt);
  if (news.type === 'heartbeat') {
    heard.note(news.heartbeat.machine, heardAt.getTime(), storedMs);
    onBeat?.(news.heartbeat.machine, heardAt.getTime(), storedMs);
  }
  return news;
}

/**
 * Re-reads the window for the beats of machines whose last message was not a heartbeat, up to the
 * last of those messages (any beat after it was read already, being later). Returns how many
 * messages it read. Machines it could not re-read keep the store's checkpoint until they beat again.
 */
async function rereadHiddenBeats(
  source: FollowSource,
  heard: HeardMachines,
  fromMs: number,
  hidden: readonly (readonly [string, BeatHidden])[],
): Promise<number> {
  if (hidden.length === 0) return 0;
  const wanted = new Set(hidden.map(([machine]) => machine));
  const machineSubjects = `${source.root}.news.machine.`;
  const { read } = await rereadBeats(
    source,
    heard,
    { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(fromMs).toISOString() },
    Math.max(...hidden.map(([, at]) => at.seq)),
    {
      wanted: (subject) => wanted.has(subject.slice(machineSubjects.length)),
      what: 'the beats before a report',
      keep: 'those machines keep the stored checkpoint until they beat',
      machines: wanted.size,
    },
  );
  return read;
}

/** Which messages a re-read notes, whom it tells, and what its logs name. */
interface Reread {
  /** Whether a machine's message (by its subject) is noted. */
  wanted(subject: string): boolean;
  onBeat?: FollowSource['onBeat'];
  /** What is re-read, and what is left when it fails, for the logs. */
  what: string;
  keep?: string;
  machines?: number;
}

/**
 * Reads the stream from `from` up to message `untilSeq`, noting the beats `how.wanted` names, on a
 * consumer of its own deleted after. One that reads nothing for FOLLOW_STALL_MS (NATS away) gives
 * up, and that is logged. Returns how many messages it read and whether it reached `untilSeq`.
 */
async function rereadBeats(
  source: FollowSource,
  heard: HeardMachines,
  from: OpenFrom,
  untilSeq: number,
  how: Reread,
): Promise<{ read: number; complete: boolean }> {
  const machineSubjects = `${source.root}.news.machine.`;
  const keep = how.keep ? `: ${how.keep}` : '';
  let read = 0;
  let complete = (from.opt_start_seq ?? 1) > untilSeq;
  if (complete) return { read, complete };
  let consumer: Consumer | undefined;
  let messages: ConsumerMessages | undefined;
  let lastReadAt = Date.now();
  const stall = setInterval(() => {
    if (Date.now() - lastReadAt < FOLLOW_STALL_MS) return;
    source.logger?.warn({ machines: how.machines, read }, `re-reading ${how.what} stalled${keep}`);
    messages?.stop();
  }, FOLLOW_STALL_MS / 2);
  stall.unref();
  try {
    consumer = await source.js.consumers.get(source.stream, from);
    messages = await consumer.consume({ max_messages: FOLLOW_BUFFER_MESSAGES });
    for await (const msg of messages) {
      read++;
      lastReadAt = Date.now();
      if (msg.subject.startsWith(machineSubjects) && how.wanted(msg.subject)) noteBeat(source.root, heard, msg, how.onBeat);
      if (msg.seq >= untilSeq) {
        complete = true;
        break;
      }
    }
  } catch (err) {
    source.logger?.warn({ err: String(err), machines: how.machines }, `re-reading ${how.what} failed${keep}`);
  } finally {
    clearInterval(stall);
    messages?.stop();
    // Done with it: not left on the server holding the rest of the stream as pending.
    await consumer?.delete().catch(() => undefined);
  }
  return { read, complete };
}

/**
 * The client makes an ordered consumer again when it misses messages, but not when the server
 * lost it (NATS restarted): its messages then just end. The follow starts again after the last
 * message read, until stopped; meanwhile the watermark stays where the follow is (lag, not silence).
 */
async function followAgainWhenEnded(
  source: FollowSource,
  following: Following,
  how: { open(from: OpenFrom): Promise<ConsumerMessages>; read(from: ConsumerMessages): Promise<void>; fromMs: number },
): Promise<void> {
  let failing = false;
  for (;;) {
    const messages = following.messages;
    if (messages) {
      await how.read(messages).catch((err) => source.logger?.warn({ err: String(err) }, 'following the news stream for hearing broke off'));
      if (following.stopped) return;
      source.logger?.warn({ afterSeq: following.upTo.seq }, 'following the news stream for hearing ended: following it again after the last message read');
    }
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_AGAIN_MS));
    if (following.stopped) return;
    following.messages = await how
      .open(
        following.upTo.seq > 0
          ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: following.upTo.seq + 1 }
          : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(how.fromMs).toISOString() },
      )
      .then(
        (opened) => {
          failing = false;
          return opened;
        },
        (err) => {
          if (!failing)
            source.logger?.warn({ err: String(err), retryInMs: FOLLOW_AGAIN_MS }, 'following the news stream for hearing could not start again: trying again');
          failing = true;
          return undefined;
        },
      );
    if (following.stopped) following.messages?.stop();
  }
}

/**
 * After NATS restarts the client's ordered consumer may wait on a consumer the server no longer
 * has, neither ending nor delivering: a follow that read nothing for FOLLOW_STALL_MS while the
 * stream holds more is stopped, and `followAgainWhenEnded` follows again after the last message read.
 */
function restartWhenStalled(source: FollowSource, following: Following): NodeJS.Timeout {
  let lastSeq = following.upTo.seq;
  let stillSince = Date.now();
  const watchdog = setInterval(() => {
    if (following.stopped || !following.messages) return;
    if (following.upTo.seq !== lastSeq) {
      lastSeq = following.upTo.seq;
      stillSince = Date.now();
      return;
    }
    if (Date.now() - stillSince < FOLLOW_STALL_MS) return;
    void source.jsm.streams.info(source.stream).then(
      (info) => {
        if (following.stopped || following.upTo.seq !== lastSeq || info.state.last_seq <= following.upTo.seq) return;
        source.logger?.warn(
          { afterSeq: following.upTo.seq, streamSeq: info.state.last_seq, stillMs: Date.now() - stillSince },
          'following the news stream for hearing stalled: following it again',
        );
        stillSince = Date.now();
        following.messages?.stop();
      },
      () => undefined,
    );
  }, FOLLOW_STALL_MS / 2);
  watchdog.unref();
  return watchdog;
}

import { headers, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { HeardMachines } from './heard-machines.js';
import { NEWS_PARTITIONS, partitionOwners } from './partitions.js';

/**
 * Each replica learns which partitions it judges (the live replicas, the partitions uncovered) this
 * often; it sends its share at each read of its own watermark (HEARING_POLL_MS), so a share's `to` is fresh.
 */
export const HEARING_SHARE_MS = 250;
/**
 * A partition whose judge's share has not covered it for this long past what this replica's own
 * follower has read (its judge dead, frozen, too busy, or a share lost) is judged here too, read
 * again from where it was last covered; the judge is left to it again once its share is caught up.
 * Under the lease's 4 s (a judge frozen is covered before its lease lapses), and past most stalls
 * of a loaded replica (1–2.7 s at a million machines on two cores, where 2 s made both replicas
 * read the stream again dozens of times).
 */
export const HEARING_SHARE_STALE_MS = 3_000;
/** A re-read of partitions taken to judge that did not finish is tried again this much later. */
const REHEAR_AGAIN_MS = 1_000;
/** A share carries at most this many beats (about 50 bytes each, under NATS's 1 MB payload); more are sent as several. */
export const HEARING_SHARE_BEATS_MAX = 10_000;

/** The subject the replicas' shares of hearing go on: core NATS, sealed, read by every replica. */
export const hearingShareSubject = (root: string): string => `${root}.hearing.share`;

const REPLICA_HEADER = 'Mesh-Replica';
const KEY_HEADER = 'Mesh-Key';
const SEAL_HEADER = 'Mesh-Seal';

/** How far news is heard: every message stored up to `seq`, and before instant `ms`, is in memory. */
export interface Covered {
  seq: number;
  ms: number;
}

/** What one replica tells the others: its judged beats, and up to where its partitions are covered since where. */
interface ShareBody {
  replica: string;
  to: Covered;
  /** `[partition, fromSeq]`: every beat of the partition stored after `fromSeq` up to `to` is in this share or one before. */
  parts: [number, number][];
  /** Flat: machine, heard at (ms), taken in (ms after heard at), and again. */
  beats: (string | number)[];
}

/** The replica key, as sealing needs it (`src/services/access/replica-key.ts`). */
interface ShareKeys {
  current(): { id: number };
  sign(chunks: readonly Uint8Array[]): { mac: Buffer };
  verify(keyId: number, mac: Uint8Array, chunks: readonly Uint8Array[]): Promise<boolean>;
}

/** Where the share goes and what it needs of the replica. */
export interface ShareLink {
  nc: Pick<NatsConnection, 'publish' | 'subscribe'>;
  subject: string;
  replica: string;
  keys: ShareKeys;
  /** The replicas alive now (their leases): the partitions are judged by rendezvous over them, as the ingest writes them. */
  liveReplicas(): readonly string[];
  logger?: Logger;
}

/** How this replica's follower rereads a partition it took to judge. */
export interface Rehearing {
  /** The stream sequence the follower is at now. */
  at(): number;
  /** Reads again after `afterSeq` up to where the follower is, noting `partitions`' beats; resolves with whether it read it all. */
  rehear(afterSeq: number, partitions: ReadonlySet<number>): Promise<boolean>;
}

export interface HearingShare {
  /** Whether this replica's follower judges `partition`'s messages now. */
  judges(partition: number): boolean;
  /** A beat this replica judged: sent with the next share. */
  beat(machine: string, atMs: number, takenMs: number): void;
  /** How far this replica's own follower has heard (each read of the watermark): its partitions covered that far, and its share sent. */
  ownRead(own: Covered): void;
  /** The instant every partition is heard before, by this replica or in a share: states are judged there. */
  heardUntilMs(): number;
  /** The partitions this replica judges now. */
  judged(): number[];
  /** Beats sent in shares, taken from shares, and shares refused (unsealed, forged, unreadable). */
  stats(): { sent: number; taken: number; refused: number };
  stop(): void;
}

type Judging = 'no' | 'catching' | 'yes';

/**
 * Shares the hearing among the replicas (issue 37). Each partition of the news (NEWS_PARTITIONS, by
 * subject, as the ingest writes it) is judged by the replica rendezvous hashing gives it among the
 * live ones: its follower parses that partition's messages and notes its beats, and at each read of
 * its watermark it sends the others those beats and how far its partitions are covered, sealed with
 * the replica key. The others pass that partition's messages on unjudged and note the share's beats,
 * so every replica still holds every machine's last-heard and any can compose. A share covers a
 * partition only from where the one before it did (`fromSeq`): one lost leaves the partition
 * uncovered here, never covered past a beat missed. A partition uncovered HEARING_SHARE_STALE_MS
 * past this replica's own follower is judged here too, read again from where it was covered;
 * meanwhile states are judged at the lowest partition's instant: the mesh shown as it was, never a
 * machine gone LATE for a beat not yet taken.
 */
export function startHearingShare(
  link: ShareLink,
  heard: HeardMachines,
  start: Covered,
  follower: Rehearing,
  /** Told when a share moved how far every partition is heard (`heardUntilMs`): states need not wait for this replica's next read. */
  onCovered?: () => void,
): HearingShare {
  const me = link.replica;
  const covered: Covered[] = Array.from({ length: NEWS_PARTITIONS }, () => ({ ...start }));
  // A start judges every partition, as it just read them all; the others' are left once their shares cover them.
  const judging: Judging[] = new Array<Judging>(NEWS_PARTITIONS).fill('yes');
  /** Per partition judged: the next share covers it from this sequence. */
  const shareFrom: number[] = new Array<number>(NEWS_PARTITIONS).fill(start.seq);
  let own: Covered = { ...start };
  let owners: string[] = partitionOwners([me]);
  let beats: (string | number)[] = [];
  /**
   * Beats are gathered only while another replica lives (alone, nobody needs them); from the
   * follower's position when gathering began, so a share never covers a partition from before it.
   */
  let gatheringFrom: number | undefined;
  const stats = { sent: 0, taken: 0, refused: 0 };
  let refusedLoggedAt = 0;
  let stopped = false;

  const mine = (p: number) => owners[p] === me;

  const publish = (body: ShareBody) => {
    const data = Buffer.from(JSON.stringify(body));
    const h = headers();
    h.set(REPLICA_HEADER, me);
    h.set(KEY_HEADER, String(link.keys.current().id));
    h.set(SEAL_HEADER, link.keys.sign([data]).mac.toString('base64url'));
    try {
      link.nc.publish(link.subject, data, { headers: h });
      stats.sent += body.beats.length / 3;
    } catch (err) {
      // NATS closing: the partitions stay uncovered on the others past the last share taken.
      link.logger?.warn({ err: String(err) }, 'a share of hearing could not be sent');
    }
  };

  const send = () => {
    const parts: [number, number][] = [];
    if (gatheringFrom !== undefined)
      for (let p = 0; p < NEWS_PARTITIONS; p++) if (judging[p] === 'yes') parts.push([p, Math.max(shareFrom[p]!, gatheringFrom)]);
    const to = own;
    publish({ replica: me, to, parts, beats });
    beats = [];
    for (const [p] of parts) shareFrom[p] = to.seq;
  };

  /** Takes partitions uncovered too long, or given to this replica, to judge: read again from where they were covered. */
  const takeUncovered = () => {
    const taken = new Map<number, number[]>();
    for (let p = 0; p < NEWS_PARTITIONS; p++) {
      if (judging[p] !== 'no' || (!mine(p) && own.ms - covered[p]!.ms <= HEARING_SHARE_STALE_MS)) continue;
      judging[p] = 'catching';
      const from = covered[p]!.seq;
      const group = taken.get(from);
      if (group) group.push(p);
      else taken.set(from, [p]);
    }
    for (const [from, partitions] of taken) {
      link.logger?.info(
        { partitions, afterSeq: from, followerSeq: follower.at() },
        'partitions of the news taken to judge here: reading them again from where they were heard',
      );
      rehearUntilDone(from, partitions);
    }
  };

  /**
   * Reads `partitions` again after `from`; the follower judges them meanwhile. A re-read that did
   * not finish (NATS away, a node of its cluster lost) is tried again REHEAR_AGAIN_MS later, up to
   * where the follower is then, the partitions judged live all along: dropping them would only
   * widen what must be read again.
   */
  const rehearUntilDone = (from: number, partitions: readonly number[]) => {
    const again = () => {
      if (stopped) return;
      if (partitions.every((p) => judging[p] !== 'catching')) return;
      const timer = setTimeout(() => rehearUntilDone(from, partitions), REHEAR_AGAIN_MS);
      timer.unref();
    };
    void follower.rehear(from, new Set(partitions)).then((complete) => {
      if (!complete) return again();
      for (const p of partitions) {
        if (judging[p] !== 'catching') continue;
        judging[p] = 'yes';
        shareFrom[p] = from;
      }
    }, again);
  };

  const timer = setInterval(() => {
    if (stopped) return;
    const live = link.liveReplicas();
    owners = partitionOwners(live.includes(me) ? live : [...live, me]);
    const alone = live.every((r) => r === me);
    if (alone) {
      gatheringFrom = undefined;
      beats = [];
    } else gatheringFrom ??= follower.at();
    takeUncovered();
  }, HEARING_SHARE_MS);
  timer.unref();

  /** Notes a share's beats, then covers its partitions that continue from where this replica has them covered. */
  const take = (body: ShareBody) => {
    const b = body.beats;
    for (let i = 0; i + 2 < b.length; i += 3) {
      const at = b[i + 1];
      const taken = b[i + 2];
      if (typeof b[i] === 'string' && typeof at === 'number' && Number.isFinite(at) && typeof taken === 'number') heard.note(b[i] as string, at, at + taken);
    }
    stats.taken += Math.floor(b.length / 3);
    for (const [p, fromSeq] of body.parts) {
      const at = covered[p];
      if (!at || at.seq < fromSeq) continue;
      if (body.to.seq > at.seq || body.to.ms > at.ms) covered[p] = { seq: Math.max(at.seq, body.to.seq), ms: Math.max(at.ms, body.to.ms) };
      // Its judge covers it on from here, caught up: left to it.
      if (judging[p] === 'yes' && !mine(p) && body.to.ms >= own.ms - HEARING_SHARE_STALE_MS / 2) judging[p] = 'no';
    }
    if (body.parts.length) onCovered?.();
  };

  const refuse = (why: string) => {
    stats.refused++;
    const now = Date.now();
    if (now - refusedLoggedAt < 60_000) return;
    refusedLoggedAt = now;
    link.logger?.warn({ why, refused: stats.refused }, 'a share of hearing was refused: not noted');
  };

  const sub: Subscription = link.nc.subscribe(link.subject);
  void (async () => {
    for await (const msg of sub) {
      // Its own, echoed: not read (a forger naming this replica is not read either).
      if (msg.headers?.get(REPLICA_HEADER) === me) continue;
      const body = await readShare(link.keys, msg.headers, msg.data).catch(() => 'unreadable');
      if (typeof body === 'string') refuse(body);
      else if (body.replica !== me && !stopped) take(body);
    }
  })().catch((err) => link.logger?.warn({ err: String(err) }, 'following the shares of hearing ended'));

  return {
    judges: (p) => judging[p] !== 'no',
    beat(machine, atMs, takenMs) {
      if (gatheringFrom === undefined) return;
      beats.push(machine, atMs, takenMs - atMs);
      // Reads of the watermark failing (NATS slow to answer) while the follower reads on: what is gathered is sent, covering nothing, rather than held without bound.
      if (beats.length >= 3 * HEARING_SHARE_BEATS_MAX) {
        publish({ replica: me, to: own, parts: [], beats });
        beats = [];
      }
    },
    ownRead(read) {
      own = { seq: Math.max(own.seq, read.seq), ms: Math.max(own.ms, read.ms) };
      for (let p = 0; p < NEWS_PARTITIONS; p++) {
        if (judging[p] !== 'yes') continue;
        const at = covered[p]!;
        if (own.seq > at.seq || own.ms > at.ms) covered[p] = { seq: Math.max(at.seq, own.seq), ms: Math.max(at.ms, own.ms) };
      }
      send();
    },
    heardUntilMs() {
      let lowest = Number.POSITIVE_INFINITY;
      for (let p = 0; p < NEWS_PARTITIONS; p++) lowest = Math.min(lowest, covered[p]!.ms);
      return lowest;
    },
    judged: () => judging.flatMap((j, p) => (j === 'no' ? [] : [p])),
    stats: () => ({ ...stats }),
    stop() {
      stopped = true;
      clearInterval(timer);
      sub.unsubscribe();
    },
  };
}

/** A share's body when its seal is good under a replica key; else why it is refused. */
async function readShare(keys: ShareKeys, h: MsgHdrs | undefined, data: Uint8Array): Promise<ShareBody | string> {
  const keyId = Number(h?.get(KEY_HEADER));
  const raw = h?.get(SEAL_HEADER);
  if (!h || !Number.isSafeInteger(keyId) || !raw || raw.length > 128) return 'unsealed';
  if (!(await keys.verify(keyId, Buffer.from(raw, 'base64url'), [data]))) return 'forged';
  const body = JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8')) as ShareBody;
  return isShareBody(body) ? body : 'unreadable';
}

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;

/** Whether a share's body (sealed: a replica's) has the shape a share has; anything else is not taken. */
function isShareBody(body: ShareBody): boolean {
  if (typeof body?.replica !== 'string' || !isCount(body.to?.seq) || !Number.isFinite(body.to?.ms)) return false;
  if (!Array.isArray(body.beats) || body.beats.length % 3 !== 0 || !Array.isArray(body.parts)) return false;
  return body.parts.every((part) => Array.isArray(part) && isCount(part[0]) && part[0] < NEWS_PARTITIONS && isCount(part[1]));
}

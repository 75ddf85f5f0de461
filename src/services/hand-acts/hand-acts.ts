import type { JetStreamManager } from '@nats-io/jetstream';
import type { KvEntry } from '@nats-io/kv';
import type { Logger } from 'pino';
import { type Buckets, HAND_ACTS_KEPT } from '../../bus/buckets.js';
import { makeRoomFor, type SharedBucket } from '../../bus/fair-share.js';
import { KvView } from '../../bus/kv-view.js';
import { retryLeaderless } from '../../bus/retry.js';
import { Invalid } from '../../kernel/errors.js';
import { ID_PATTERN, newId } from '../../kernel/ids.js';
import { LiveQueue } from '../../kernel/live-queue.js';
import { newestFirst, type PageRequest, pageOf } from '../../kernel/pages.js';
import { type ActOutbox, writeToOutbox } from './outbox-write.js';

/**
 * An actor's share of the hand-acts kept: a tenth of the log. An actor at its share makes room with
 * its own oldest, so no actor's acts, however many, push another actor's out (docs/calls.md).
 */
export const HAND_ACTS_KEPT_PER_ACTOR = HAND_ACTS_KEPT / 10;

/** The hand-act log as a fair share (src/bus/fair-share.ts): by actor. */
export const handActsShared = (mesh: Pick<HandActLog, 'buckets' | 'views'>): SharedBucket<HandAct> => ({
  kv: mesh.buckets.handActs,
  view: mesh.views.handActs,
  kept: HAND_ACTS_KEPT,
  share: HAND_ACTS_KEPT_PER_ACTOR,
  ownerOf: (act) => act.actor,
  mayGo: () => true,
});

/** A why, cause or condition is a sentence or a paragraph, not a document: bounded so the log stays readable. */
export const HAND_ACT_TEXT_MAX = 4000;
/** An act or a target is a short label. */
export const HAND_ACT_LABEL_MAX = 200;
/**
 * A target made from names (each up to 200 characters) cut to a label's bound, so an act that has
 * been done is never refused its trace for the length of its label.
 */
export const targetLabel = (target: string): string => (target.length <= HAND_ACT_LABEL_MAX ? target : `${target.slice(0, HAND_ACT_LABEL_MAX - 1)}…`);
/** "This week" for status and the default window of repeatedCauses: the last seven days. */
export const HAND_ACT_WEEK_MS = 7 * 24 * 3600 * 1000;
export const HAND_ACTS_PAGE_MAX = 500;
export const HAND_ACTS_PAGE_DEFAULT = 20;

/** One act done by hand or by an acting verb, with its why: the mesh's audit log. */
export interface HandAct {
  id: string;
  at: string;
  actor: string;
  act: string;
  target: string | null;
  why: string;
  cause: string | null;
  condition: string | null;
  /** The call that did it, when it was done through a verb. */
  callId: string | null;
}

export interface RepeatedCause {
  cause: string;
  count: number;
  firstAt: string;
  lastAt: string;
}

/** Why an act was done: what every acting verb requires. Throws Invalid when absent or blank. */
export function checkWhy(why: unknown): string {
  if (typeof why !== 'string' || why.trim() === '') throw new Invalid('why is required: say why this is done, in a sentence', 'why');
  return text(why, 'why', HAND_ACT_TEXT_MAX)!;
}

function text(value: unknown, field: string, max: number): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw new Invalid(`${field} must be a string`, field);
  if (value.includes('\u0000')) throw new Invalid(`${field} holds a NUL character (U+0000), which no text may hold`, field);
  const trimmed = value.trim();
  if (trimmed.length > max) throw new Invalid(`${field} is ${trimmed.length} characters; at most ${max}`, field);
  return trimmed === '' ? null : trimmed;
}

/** Reads and checks the three things every acting verb takes; Invalid names the first wrong one. */
export function checkActing(args: { why?: unknown; cause?: unknown; condition?: unknown }): { why: string; cause: string | null; condition: string | null } {
  return { why: checkWhy(args.why), cause: text(args.cause, 'cause', HAND_ACT_LABEL_MAX), condition: text(args.condition, 'condition', HAND_ACT_TEXT_MAX) };
}

/** What the hand-act log needs of the mesh: its bucket and this replica's view of it. */
export interface HandActLog {
  buckets: Pick<Buckets, 'handActs' | 'writeRetryMs'>;
  views: { handActs: KvView<HandAct> };
  /** Where each hand-act is logged as it is recorded (absent in tests of the log alone). */
  logger?: Logger;
  /**
   * The act's transaction, when the act runs in one (an acting verb, a seat change): the hand-act
   * is written to the outbox in it, and relayed to the bucket after the commit (src/services/outbox/outbox.ts).
   */
  outbox?: ActOutbox;
}

export interface NewHandAct {
  actor: string;
  act: string;
  target?: string | null;
  why: string;
  cause?: string | null;
  condition?: string | null;
  callId?: string | null;
}

function decodeHandAct(entry: KvEntry): HandAct | undefined {
  try {
    const act = entry.json<HandAct>();
    return act && typeof act.id === 'string' && typeof act.at === 'string' ? act : undefined;
  } catch {
    return undefined;
  }
}

/** Starts this replica's view of the hand-act log. */
export function startHandActView(buckets: Buckets, jsm: JetStreamManager, logger?: Logger): Promise<KvView<HandAct>> {
  return KvView.start(buckets.handActs, buckets.names.handActs, jsm, {
    decode: decodeHandAct,
    limits: { maxEntries: HAND_ACTS_KEPT },
    logger,
  });
}

/**
 * Appends a hand-act (never overwrites one); Invalid when why is blank or a field is too long. In
 * an act's transaction (`mesh.outbox`) it is written to the outbox there, so it commits with the
 * act; otherwise (a log alone, in tests) it is put in the bucket at once.
 */
export async function appendHandAct(mesh: HandActLog, input: NewHandAct): Promise<HandAct> {
  const acting = checkActing(input);
  const act = text(input.act, 'act', HAND_ACT_LABEL_MAX);
  if (!act) throw new Invalid('act is required: name what was done', 'act');
  const now = Date.now();
  const record: HandAct = {
    id: newId(now),
    at: new Date(now).toISOString(),
    actor: input.actor,
    act,
    target: text(input.target, 'target', HAND_ACT_LABEL_MAX),
    ...acting,
    callId: input.callId ?? null,
  };
  const body = JSON.stringify(record);
  if (mesh.outbox) {
    await writeToOutbox(mesh.outbox.tx, 'handActs', record.id, body);
    mesh.outbox.ids.push(record.id);
    return record;
  }
  await makeRoomFor(handActsShared(mesh), record.actor);
  const revision = await retryLeaderless(
    async (attempt) => {
      try {
        return await mesh.buckets.handActs.create(record.id, body);
      } catch (error) {
        // A try whose answer was lost (the node died) may have written it: then the entry holds these very bytes.
        const entry = attempt > 0 ? await mesh.buckets.handActs.get(record.id) : null;
        if (entry?.operation === 'PUT' && entry.string() === body) return entry.revision;
        throw error;
      }
    },
    `hand-act ${record.id}`,
    undefined,
    mesh.buckets.writeRetryMs,
  );
  mesh.views.handActs.apply(record.id, record, revision);
  mesh.logger?.info(
    { handActId: record.id, actor: record.actor, act: record.act, target: record.target, cause: record.cause, why: record.why },
    'hand-act recorded',
  );
  return record;
}

/** Each field given narrows the list: since an instant, and exactly this cause, actor, act or target. */
export interface HandActFilter {
  since?: Date | null;
  cause?: string | null;
  actor?: string | null;
  act?: string | null;
  target?: string | null;
}

const matches = (want: string | null | undefined, have: string | null): boolean => want == null || want === have;

function within(mesh: HandActLog, filter: HandActFilter): HandAct[] {
  const since = filter.since?.toISOString();
  return mesh.views.handActs
    .values()
    .map((e) => e.value)
    .filter(
      (a) =>
        (!since || a.at >= since) &&
        (!filter.cause || a.cause === filter.cause) &&
        matches(filter.actor, a.actor) &&
        matches(filter.act, a.act) &&
        matches(filter.target, a.target),
    )
    .sort(newestFirst);
}

/**
 * The hand-act an acting verb leaves after its work: what was done to what, with the verb's why,
 * cause and condition, by the verb's caller, naming the call that did it.
 */
export function leaveHandAct(
  mesh: HandActLog,
  acting: { why: string; cause?: string | null; condition?: string | null },
  call: { caller: string; callId: string },
  act: string,
  target: string | null,
): Promise<HandAct> {
  return appendHandAct(mesh, { actor: call.caller, act, target, why: acting.why, cause: acting.cause, condition: acting.condition, callId: call.callId });
}

/** Hand-acts newest first, at or after `since`, of one cause, actor, act and target when given; paged by id. */
export function listHandActs(mesh: HandActLog, filter: HandActFilter, page: PageRequest): HandAct[] {
  // A page asks for first + 1 to know whether another follows: below 1, first was negative.
  if (page.limit < 1) throw new Invalid('first must be 0 or more', 'first');
  if (page.limit > HAND_ACTS_PAGE_MAX + 1) throw new Invalid(`at most ${HAND_ACTS_PAGE_MAX} hand-acts a page`, 'first');
  return pageOf(within(mesh, filter), page);
}

/**
 * The causes given more than once since `since` (default: the last seven days), most frequent
 * first, with when each was first and last seen.
 */
export function repeatedCauses(mesh: HandActLog, since: Date = new Date(Date.now() - HAND_ACT_WEEK_MS)): RepeatedCause[] {
  const byCause = new Map<string, RepeatedCause>();
  for (const act of within(mesh, { since })) {
    if (!act.cause) continue;
    const seen = byCause.get(act.cause);
    if (!seen) byCause.set(act.cause, { cause: act.cause, count: 1, firstAt: act.at, lastAt: act.at });
    else {
      seen.count++;
      if (act.at < seen.firstAt) seen.firstAt = act.at;
      if (act.at > seen.lastAt) seen.lastAt = act.at;
    }
  }
  return [...byCause.values()].filter((c) => c.count > 1).sort((a, b) => b.count - a.count || (a.lastAt < b.lastAt ? 1 : -1));
}

/** How many hand-acts were recorded since `since`, by default the last seven days (status shows the week's). */
export const countHandActsSince = (mesh: HandActLog, since: Date = new Date(Date.now() - HAND_ACT_WEEK_MS)): number => within(mesh, { since }).length;

/**
 * Follows the log: the hand-acts kept that were recorded after the one with id `after` (a
 * `HandActConnection` cursor), oldest first, then each one as it is recorded on any replica (the
 * bucket's watch). Without `after`, only new ones. A follower that lets LIVE_WAITING_MAX wait is
 * dropped (its last `item` is where it resumes). Invalid for a malformed cursor.
 */
export function followHandActs(mesh: HandActLog, after?: string | null): LiveQueue<HandAct> {
  if (after != null && !ID_PATTERN.test(after))
    throw new Invalid(`after ${JSON.stringify(after.slice(0, 60))} is not a hand-act cursor: 19 letters and digits`, 'after');
  const kept =
    after == null
      ? []
      : mesh.views.handActs
          .values()
          .map((e) => e.value)
          .filter((a) => a.id > after)
          .sort((a, b) => -newestFirst(a, b));
  const inBacklog = new Set(kept.map((a) => a.id));
  let stop: () => void = () => undefined;
  const queue = new LiveQueue<HandAct>(kept[Symbol.iterator](), () => stop());
  stop = mesh.views.handActs.onEntry((entry) => {
    if (entry.operation !== 'PUT') return;
    const act = decodeHandAct(entry);
    if (act && !inBacklog.has(act.id)) queue.push(act);
  });
  return queue;
}

import type { JetStreamManager } from '@nats-io/jetstream';
import type { KvEntry } from '@nats-io/kv';
import type { Logger } from 'pino';
import { type Buckets, CALLS_KEPT, CALLS_KEPT_FOR_MS } from '../../bus/buckets.js';
import { type SharedBucket, withRoomFor } from '../../bus/fair-share.js';
import { KvView } from '../../bus/kv-view.js';
import { isWrongLastSequence, retryLeaderless } from '../../bus/retry.js';
import { DomainError, isStoreUnavailable, STORE_UNAVAILABLE_MESSAGE } from '../../kernel/errors.js';
import { ID_PATTERN, newId } from '../../kernel/ids.js';
import { JSON_DEPTH_MAX, jsonTooDeep } from '../../kernel/values.js';
import type { CallDoor } from '../verbs/verb.js';
import { CallEndWatch } from './end-watch.js';

/** A call's answer is kept up to this many bytes of JSON: enough to read, small enough that 1000 fit in memory. */
export const ANSWER_BOUND = 64 * 1024;
/** A call's arguments are kept up to the same bound, so one entry stays far below NATS's 1 MiB payload. */
export const ARGS_BOUND = 64 * 1024;
/** A page of calls holds at most this many: each may carry 64 KiB of answer. */
export const CALLS_PAGE_MAX = 100;
export const CALLS_PAGE_DEFAULT = 20;

export const CALL_STATES = ['RUNNING', 'OK', 'FAILED', 'ABANDONED'] as const;
export type CallState = (typeof CALL_STATES)[number];

/** What the calls functions need of the mesh: the calls bucket, this replica's view of it and the replica's name. */
export interface CallsMesh {
  buckets: Pick<Buckets, 'calls' | 'writeRetryMs'>;
  views: { calls: KvView<CallSummary> };
  config: { replica: string };
  /** Where a call's end is logged, one line each (absent in tests of the records alone). */
  logger?: Logger;
}

export interface CallError {
  code: string;
  message: string;
}

/** One verb invocation, as the calls bucket keeps it under its id. */
export interface Call {
  id: string;
  seat: string;
  verb: string;
  /** The arguments; when their JSON is over ARGS_BOUND, that JSON cut there, as a string. */
  args: unknown;
  argsTruncated: boolean;
  caller: string;
  door: CallDoor;
  state: CallState;
  startedAt: string;
  endedAt: string | null;
  /** The answer as JSON text, cut at ANSWER_BOUND bytes when longer. */
  answer: string | null;
  answerTruncated: boolean;
  /** The full answer's size in bytes, kept even when the answer is cut. */
  answerBytes: number | null;
  error: CallError | null;
  /** The replica that ran it: its lease says whether it is still alive. */
  replica: string;
  /** The call that forwarded this one here (callVerb to the controller's own seat), when one did. */
  outerCallId?: string | null;
}

/** What a replica keeps of each call in memory to list and count them: all but the bulky parts. */
export type CallSummary = Omit<Call, 'args' | 'answer'>;

export interface NewCall {
  seat: string;
  verb: string;
  args: unknown;
  caller: string;
  door: CallDoor;
  outerCallId?: string | null;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Cuts text to at most `bound` UTF-8 bytes on a character boundary; says whether it cut and the full size. */
export function boundText(text: string, bound: number): { text: string; truncated: boolean; bytes: number } {
  const bytes = encoder.encode(text);
  if (bytes.length <= bound) return { text, truncated: false, bytes: bytes.length };
  let end = bound;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return { text: decoder.decode(bytes.subarray(0, end)), truncated: true, bytes: bytes.length };
}

export function decodeCall(entry: KvEntry): Call | undefined {
  try {
    const call = entry.json<Call>();
    return call && typeof call.id === 'string' && (CALL_STATES as readonly string[]).includes(call.state) ? call : undefined;
  } catch {
    return undefined;
  }
}

const summary = ({ args: _args, answer: _answer, ...rest }: Call): CallSummary => rest;

/** Each replica's watch over the ends it writes, by its calls view (one a replica). */
const endWatches = new WeakMap<KvView<CallSummary>, CallEndWatch>();

/** Starts this replica's view of the calls bucket, mirroring its limits, and its watch over the ends it writes. */
export async function startCallView(buckets: Pick<Buckets, 'calls' | 'names'>, jsm: JetStreamManager, logger?: Logger): Promise<KvView<CallSummary>> {
  const view = await KvView.start(buckets.calls, buckets.names.calls, jsm, {
    decode: (entry) => {
      const call = decodeCall(entry);
      return call && summary(call);
    },
    limits: { maxEntries: CALLS_KEPT, maxAgeMs: CALLS_KEPT_FOR_MS },
    logger,
  });
  const watch = new CallEndWatch((id, body) => {
    logger?.warn({ callId: id }, 'another replica marked a call ABANDONED after it ended here: its end is written again');
    putCall(buckets, id, body).catch((err) => logger?.error({ err, callId: id }, 'could not write a call’s end again'));
  });
  endWatches.set(view, watch);
  view.onEntry((entry) => watch.heard(entry.key, entry.revision, () => entry.operation === 'PUT' && decodeCall(entry)?.state === 'ABANDONED'));
  return view;
}

/** Puts a call's record under its id, retried while the bucket's stream elects a leader (a put of the same record twice is harmless); answers its revision. */
const putCall = (buckets: Pick<Buckets, 'calls' | 'writeRetryMs'>, id: string, body: string): Promise<number> =>
  retryLeaderless(() => buckets.calls.put(id, body), `call ${id}`, undefined, buckets.writeRetryMs);

/** Brings this replica's view up to the call as written at `revision`, and logs a call that ended. */
function applyWritten(mesh: CallsMesh, call: Call, revision: number): Call {
  mesh.views.calls.apply(call.id, summary(call), revision);
  // An operator follows calls in the log: one line as each ends, by the replica that ran it.
  if (call.state !== 'RUNNING' && mesh.logger) {
    const ms = call.endedAt ? Date.parse(call.endedAt) - Date.parse(call.startedAt) : undefined;
    mesh.logger.info(
      { callId: call.id, seat: call.seat, verb: call.verb, caller: call.caller, door: call.door, state: call.state, ms, errorCode: call.error?.code },
      'call ended',
    );
  }
  return call;
}

function keptArgs(args: unknown): { args: unknown; argsTruncated: boolean } {
  // A refused call is recorded with what it was given: too deep to serialize, it is named, not kept.
  if (jsonTooDeep(args)) return { args: `(arguments nested more than ${JSON_DEPTH_MAX} deep, not kept)`, argsTruncated: true };
  const text = JSON.stringify(args ?? {});
  const bounded = boundText(text, ARGS_BOUND);
  return bounded.truncated ? { args: bounded.text, argsTruncated: true } : { args: args ?? {}, argsTruncated: false };
}

function fresh(mesh: CallsMesh, call: NewCall, state: CallState): Call {
  const now = Date.now();
  return {
    id: newId(now),
    seat: call.seat,
    verb: call.verb,
    ...keptArgs(call.args),
    caller: call.caller,
    door: call.door,
    state,
    startedAt: new Date(now).toISOString(),
    endedAt: null,
    answer: null,
    answerTruncated: false,
    answerBytes: null,
    error: null,
    replica: mesh.config.replica,
    outerCallId: call.outerCallId ?? null,
  };
}

/**
 * The one mapping of an error into a call record and a door's answer: a domain error keeps its code
 * and message; anything else is INTERNAL with a fixed text, so an unexpected error's own words
 * (stack details, SQL, hosts) never reach a client through `Call.error`. The caller logs it.
 */
export const callErrorOf = (error: unknown): CallError =>
  error instanceof DomainError
    ? { code: error.code, message: error.message }
    : isStoreUnavailable(error)
      ? { code: 'UNAVAILABLE', message: STORE_UNAVAILABLE_MESSAGE }
      : { code: 'INTERNAL', message: 'internal error; the gateway logged it' };

const recorded = new WeakMap<object, string>();

/** Remembers the call an error was recorded on, so the door answering it can name that call. */
export function markRecorded(error: unknown, callId: string): void {
  if (error && typeof error === 'object') recorded.set(error, callId);
}

/** The id of the call an error was recorded on, when it was. */
export const recordedCallOf = (error: unknown): string | undefined => (error && typeof error === 'object' ? recorded.get(error) : undefined);

/** A call written RUNNING, with the revision its end is written over. */
export interface StartedCall {
  call: Call;
  revision: number;
}

/**
 * A caller's share of the calls kept: a tenth of the bucket, so one caller's calls, however many,
 * push out only its own, and ten callers at their share still fit (docs/calls.md).
 */
export const CALLS_KEPT_PER_CALLER = CALLS_KEPT / 10;

/** The calls bucket as a fair share (src/bus/fair-share.ts): by caller; a RUNNING call never goes. */
const callsShared = (mesh: CallsMesh): SharedBucket<CallSummary> => ({
  kv: mesh.buckets.calls,
  view: mesh.views.calls,
  kept: CALLS_KEPT,
  share: CALLS_KEPT_PER_CALLER,
  ownerOf: (call) => call.caller,
  mayGo: (call) => call.state !== 'RUNNING',
});

/**
 * Writes a call RUNNING before its work starts; the work must not begin until this resolves. Room
 * is made first within its caller's share (src/bus/fair-share.ts).
 */
export async function startCall(mesh: CallsMesh, call: NewCall): Promise<StartedCall> {
  const running = fresh(mesh, call, 'RUNNING');
  // Written into the view within its turn: the next call's room is weighed with this one in it.
  return withRoomFor(callsShared(mesh), call.caller, async () => {
    const revision = await putCall(mesh.buckets, running.id, JSON.stringify(running));
    return { call: applyWritten(mesh, running, revision), revision };
  });
}

/** Refusals counted on each replica, by error code: what a refused request leaves. */
const refusals = new WeakMap<KvView<CallSummary>, Map<string, number>>();

/**
 * A call refused before any work (bad arguments, unknown verb, BUSY) is counted, never kept: a
 * flood of refusals costs a counter, and pushes no caller's kept call out (docs/calls.md). Answers
 * no call id (there is none to read).
 */
export async function refuseCall(mesh: CallsMesh, call: NewCall, error: CallError): Promise<{ id?: string }> {
  const counts = refusals.get(mesh.views.calls) ?? new Map<string, number>();
  refusals.set(mesh.views.calls, counts);
  counts.set(error.code, (counts.get(error.code) ?? 0) + 1);
  mesh.logger?.debug({ seat: call.seat, verb: call.verb, caller: call.caller, door: call.door, errorCode: error.code }, 'call refused');
  return {};
}

/** The refusals this replica counted, by error code (for /metrics: `mesh_calls_refused_total{code}`). */
export const refusedCalls = (mesh: Pick<CallsMesh, 'views'>): ReadonlyMap<string, number> => refusals.get(mesh.views.calls) ?? new Map();

/** Ends a call OK with its answer (JSON, bounded to ANSWER_BOUND, its full size kept). */
export function finishCall(mesh: CallsMesh, started: StartedCall, answer: unknown): Promise<Call> {
  return writeEnd(mesh, started, endedOk(started, answer));
}

/**
 * A started call ended OK with its answer, as its record will be written: an acting verb writes it
 * to the outbox in its act's transaction (controller/invoke.ts), so the act and its call's end commit together.
 */
export function endedOk(started: StartedCall, answer: unknown): Call {
  return endedOkWithText(started, answer === undefined ? 'null' : JSON.stringify(answer));
}

function endedOkWithText(started: StartedCall, text: string): Call {
  const bounded = boundText(text, ANSWER_BOUND);
  return {
    ...started.call,
    state: 'OK',
    endedAt: new Date().toISOString(),
    answer: bounded.text,
    answerTruncated: bounded.truncated,
    answerBytes: bounded.bytes,
  };
}

/** Ends a call OK with an answer already in JSON text. */
export function finishCallWithText(mesh: CallsMesh, started: StartedCall, text: string): Promise<Call> {
  return writeEnd(mesh, started, endedOkWithText(started, text));
}

/**
 * Puts a call's end relayed from the outbox (outbox/outbox.ts) over whatever its id holds (its
 * RUNNING record, or a sweep's ABANDONED guess): what happened. Already there with these bytes (a
 * row relayed twice) it is not put again, so a follower sees the end once.
 */
export async function putRelayedCall(mesh: CallsMesh, body: string): Promise<void> {
  const call = JSON.parse(body) as Call;
  const there = await mesh.buckets.calls.get(call.id);
  if (there?.operation === 'PUT' && there.string() === body) return;
  const revision = await mesh.buckets.calls.put(call.id, body);
  endWatches.get(mesh.views.calls)?.watch(call.id, body, revision, undefined);
  applyWritten(mesh, call, revision);
}

/** Ends a call FAILED with its error, and the answer text when there was one. */
export function failCall(mesh: CallsMesh, started: StartedCall, error: CallError, answerText?: string): Promise<Call> {
  const bounded = answerText === undefined ? undefined : boundText(answerText, ANSWER_BOUND);
  return writeEnd(mesh, started, {
    ...started.call,
    state: 'FAILED',
    endedAt: new Date().toISOString(),
    error,
    ...(bounded && { answer: bounded.text, answerTruncated: bounded.truncated, answerBytes: bounded.bytes }),
  });
}

/**
 * Writes a started call's end as a compare-and-set on its RUNNING revision. Another replica's sweep
 * marks the call ABANDONED the same way when this replica's lease lapses (NATS unreachable for a
 * while); on a cluster NATS 2.9 checks a compare-and-set only against the writes it has applied, so
 * a plain put of the end let the sweep's guess land after it, over an acknowledged answer. Two
 * compare-and-sets on one revision should never both win, and on a single server or NATS 2.10 they
 * do not; on a 2.9 cluster they can (its check reads only applied writes: 15 of 300 races here), so
 * the end is also watched until such a write would have landed (CallEndWatch). When this write loses,
 * what won is a sweep's ABANDONED (or this write's own try whose answer was lost): the end is put
 * over it, as what happened, and no sweep writes a call that is no longer RUNNING.
 */
async function writeEnd(mesh: CallsMesh, started: StartedCall, ended: Call): Promise<Call> {
  const body = JSON.stringify(ended);
  let revision: number;
  try {
    revision = await retryLeaderless(
      () => mesh.buckets.calls.update(ended.id, body, started.revision),
      `call ${ended.id}`,
      undefined,
      mesh.buckets.writeRetryMs,
    );
  } catch (error) {
    if (!isWrongLastSequence(error)) throw error;
    mesh.logger?.warn({ callId: ended.id, state: ended.state }, 'a call was settled by another replica while it ran here: its end is written over that');
    revision = await putCall(mesh.buckets, ended.id, body);
  }
  const seen = mesh.views.calls.get(ended.id);
  endWatches.get(mesh.views.calls)?.watch(ended.id, body, revision, seen && { revision: seen.revision, abandoned: seen.value.state === 'ABANDONED' });
  return applyWritten(mesh, ended, revision);
}

/** The call with that id, read from the bucket (not the view), with its revision; undefined when absent. */
export async function readCall(mesh: CallsMesh, id: string): Promise<{ call: Call; revision: number } | undefined> {
  if (!ID_PATTERN.test(id)) return undefined;
  const entry = await mesh.buckets.calls.get(id);
  if (entry?.operation !== 'PUT') return undefined;
  const call = decodeCall(entry);
  return call && { call, revision: entry.revision };
}

/**
 * Marks a RUNNING call ABANDONED with compare-and-set on the revision it was read at, so two
 * replicas starting at once cannot both write it, and a call that just finished is left alone.
 * When its work was done — `doneBy`, the hand-act it left, exists — the call is recorded OK
 * instead, its answer saying the work was done and the answer lost (`reason`), so the calls and the
 * hand-acts never contradict each other. True when this replica marked it.
 */
export async function abandonCall(mesh: CallsMesh, id: string, revision: number, reason: string, doneBy?: string): Promise<boolean> {
  const found = await readCall(mesh, id);
  if (!found || found.revision !== revision || found.call.state !== 'RUNNING') return false;
  const endedAt = new Date().toISOString();
  let call: Call;
  if (doneBy) {
    const text = JSON.stringify({ done: true, handActId: doneBy, note: `done; the answer was lost: ${reason}` });
    call = { ...found.call, state: 'OK', endedAt, answer: text, answerTruncated: false, answerBytes: Buffer.byteLength(text) };
  } else {
    call = { ...found.call, state: 'ABANDONED', endedAt, error: { code: 'ABANDONED', message: reason } };
  }
  try {
    const next = await mesh.buckets.calls.update(id, JSON.stringify(call), revision);
    mesh.views.calls.apply(id, summary(call), next);
    return true;
  } catch {
    return false;
  }
}

import { headers, NoRespondersError, RequestError, TimeoutError } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { Bus } from '../../bus/nats.js';
import type { Subjects } from '../../bus/subjects.js';
import { inSpan, natsSpanAttributes, SpanKind, traceHeaders } from '../../bus/trace-context.js';
import { DomainError, Forbidden, Invalid, NotFound } from '../../kernel/errors.js';
import { checkName } from '../../kernel/names.js';
import { holdsNul, JSON_DEPTH_MAX, jsonTooDeep } from '../../kernel/values.js';
import type { Db } from '../../store/db.js';
import type { Scope } from '../access/caller.js';
import { proveForwarded } from '../access/forwarded.js';
import type { ReplicaKeys } from '../access/replica-key.js';
import type { Catalogue } from '../seats/catalogue.js';
import { aliasesOfSeats, seatByName } from '../seats/seats.js';
import type { ArgType, Verb } from '../verbs/protocol.js';
import type { CallDoor } from '../verbs/verb.js';
import { type Call, type CallsMesh, callErrorOf, failCall, finishCallWithText, type NewCall, refuseCall, type StartedCall, startCall } from './records.js';

/** A forwarded call waits this long by default: a verb that takes longer should answer at once and report later. */
export const CALL_TIMEOUT_DEFAULT_MS = 10_000;
/** ...and never longer than this, so a caller is not held for minutes by a seat that is gone. */
export const CALL_TIMEOUT_MAX_MS = 60_000;

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;

const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

/** Whether a JSON value has the declared type; ID also takes an integer, which it turns to a string. */
function ofType(type: ArgType, value: unknown): { ok: true; value: unknown } | { ok: false } {
  switch (type) {
    case 'String':
      return typeof value === 'string' ? { ok: true, value } : { ok: false };
    case 'ID':
      if (typeof value === 'string') return { ok: true, value };
      return Number.isSafeInteger(value) ? { ok: true, value: String(value) } : { ok: false };
    case 'Int':
      return Number.isSafeInteger(value) ? { ok: true, value } : { ok: false };
    case 'Float':
      return typeof value === 'number' && Number.isFinite(value) ? { ok: true, value } : { ok: false };
    case 'Boolean':
      return typeof value === 'boolean' ? { ok: true, value } : { ok: false };
    case 'JSON':
      return { ok: true, value };
    case 'DateTime':
      if (value instanceof Date) return Number.isNaN(value.getTime()) ? { ok: false } : { ok: true, value: value.toISOString() };
      return typeof value === 'string' && DATE_TIME.test(value) && !Number.isNaN(Date.parse(value)) ? { ok: true, value } : { ok: false };
    case '[String]':
      return isStringList(value) ? { ok: true, value } : { ok: false };
    case '[[String]]':
      return Array.isArray(value) && value.every(isStringList) ? { ok: true, value } : { ok: false };
  }
}

const describe = (value: unknown) =>
  value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value === 'object' ? 'an object' : `${typeof value} ${JSON.stringify(value).slice(0, 40)}`;

/**
 * Judges a call's arguments against the verb a seat's row declares: an object, no argument the verb
 * does not take, every required one present (null counts as absent), each of its declared type.
 * Returns the arguments (IDs as strings); throws Invalid naming the first one wrong.
 */
export function judgeArgs(seat: string, verb: Verb, args: unknown): Record<string, unknown> {
  const where = `${seat}.${verb.name}`;
  if (args === undefined || args === null) args = {};
  if (typeof args !== 'object' || Array.isArray(args)) throw new Invalid(`the arguments of ${where} must be a JSON object, got ${describe(args)}`, 'args');
  if (jsonTooDeep(args)) throw new Invalid(`the arguments of ${where} nest more than ${JSON_DEPTH_MAX} deep`, 'args');
  if (holdsNul(args)) throw new Invalid(`the arguments of ${where} hold a NUL character (U+0000), which no text may hold`, 'args');
  const given = args as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(given)) {
    if (!verb.args.some((a) => a.name === name)) {
      const known = verb.args.map((a) => a.name).join(', ') || 'none';
      throw new Invalid(`${where} takes no argument ${JSON.stringify(name.slice(0, 60))} (it takes: ${known})`, name);
    }
  }
  for (const arg of verb.args) {
    const value = given[arg.name];
    if (value === undefined || value === null) {
      if (arg.required) throw new Invalid(`${where} requires ${arg.name} (${arg.type})`, arg.name);
      continue;
    }
    const judged = ofType(arg.type, value);
    if (!judged.ok) throw new Invalid(`${where}: ${arg.name} must be ${arg.type}, got ${describe(value)}`, arg.name);
    out[arg.name] = judged.value;
  }
  return out;
}

export interface CallVerbRequest {
  seat: string;
  verb: string;
  args?: unknown;
  timeoutMs?: number | null;
  caller: string;
  /** The caller's scopes: a call to the controller's own seat runs with these, never with the controller's. */
  scopes: ReadonlySet<Scope>;
  door: CallDoor;
}

/** What forwarding a call needs of the mesh: the calls log, the seats to judge against, the bus to send on. */
export interface ForwardMesh extends CallsMesh {
  db: Db;
  catalogue: Catalogue;
  bus: Pick<Bus, 'nc'>;
  subjects: Pick<Subjects, 'seatVerb' | 'seatVerbAs'>;
  logger: Logger;
  config: { controller: string; replica: string };
  /** The replicas' shared key: a call forwarded to the controller's own seat carries a proof made with it. */
  replicaKeys: Pick<ReplicaKeys, 'current' | 'sign'>;
}

/**
 * Headers a forwarded call carries (src/services/access/forwarded.ts): the original caller, its
 * scopes and the outer call. To the controller's own seat they come with a proof made with the
 * replica key, and the responder believes them only with a good one: the subject alone proves
 * nothing on a NATS without permissions.
 */
export { CALLER_HEADER, OUTER_CALL_HEADER, SCOPES_HEADER } from '../access/forwarded.js';
/** The forwarding verb's name: it forwards once, never to itself on the controller's seat (one request, one level of calls). */
export const FORWARDING_VERB = 'callVerb';

/** The recorded form of a refused call's seat or verb: as given, shortened, so a bad name is still visible. */
const label = (value: unknown) => (typeof value === 'string' ? value.slice(0, 200) : String(value).slice(0, 200));

/**
 * Forwards a call to any seat's verb on `<subjects>.seat.<seat>.<verb>`. Judged first against the
 * seat's row (unknown seat or verb, missing, unknown or mistyped argument, time-out outside 1 ms to
 * CALL_TIMEOUT_MAX_MS): refused before anything is sent, recorded FAILED, and thrown. Otherwise
 * the call is recorded RUNNING, sent, and recorded OK with the answer, or FAILED with the seat's
 * error, a time-out or no responders; the call is returned either way.
 */
export async function forwardCall(mesh: ForwardMesh, request: CallVerbRequest): Promise<Call> {
  const record: NewCall = { seat: label(request.seat), verb: label(request.verb), args: request.args ?? {}, caller: request.caller, door: request.door };
  let verb: Verb;
  let args: Record<string, unknown>;
  let timeout: number;
  try {
    checkName(request.seat, 'seat');
    checkName(request.verb, 'verb');
    const seat = await seatByName(mesh.db, mesh.catalogue, request.seat);
    record.seat = seat.name;
    const found = seat.serves.find((v) => v.name === request.verb);
    if (!found) throw new NotFound('verb', `${seat.name}.${request.verb}`);
    if (seat.name === mesh.config.controller && found.name === FORWARDING_VERB) {
      throw new Forbidden(`${FORWARDING_VERB} does not nest: call ${seat.name}'s verb directly instead of through another ${FORWARDING_VERB}`);
    }
    verb = found;
    timeout = request.timeoutMs ?? CALL_TIMEOUT_DEFAULT_MS;
    if (!Number.isInteger(timeout) || timeout < 1 || timeout > CALL_TIMEOUT_MAX_MS) {
      throw new Invalid(`timeoutMs must be 1 to ${CALL_TIMEOUT_MAX_MS}, got ${timeout}`, 'timeoutMs');
    }
    args = judgeArgs(seat.name, verb, request.args);
  } catch (error) {
    if (!(error instanceof DomainError)) mesh.logger.error({ err: error, seat: record.seat, verb: record.verb }, 'judging a forwarded call failed');
    await refuseCall(mesh, record, callErrorOf(error));
    throw error;
  }
  const started = await startCall(mesh, { ...record, args });
  const { call } = started;
  const body = new TextEncoder().encode(JSON.stringify(args));
  const forwarded = { caller: call.caller, scopes: request.scopes, outerCallId: call.id };
  let text: string | undefined;
  let failure: unknown;
  // A holder listens on the name its manifest has, which may be a name the seat had before a
  // rename: the canonical name is tried first, then each alias while nobody answers.
  for (const name of [call.seat, ...((await aliasesOfSeats(mesh.db, [call.seat]))[0] ?? [])]) {
    try {
      // The controller's own verbs are sent on its named subject: the caller it forwards is then believed.
      const subject =
        name === mesh.config.controller ? mesh.subjects.seatVerbAs(name, verb.name, mesh.config.controller) : mesh.subjects.seatVerb(name, verb.name);
      // The caller, its scopes and the outer call, proven with the replica key (believed only with the proof, on the controller's own seat).
      const h = headers();
      proveForwarded(mesh.replicaKeys, h, { subject, ...forwarded }, body);
      // A client span, its traceparent in the request's headers: the holder's work joins the caller's trace.
      text = await inSpan(`callVerb ${name}.${verb.name}`, { kind: SpanKind.CLIENT, attributes: natsSpanAttributes(subject, call.id) }, async () =>
        (await mesh.bus.nc.request(subject, body, { timeout, headers: traceHeaders(h) })).string(),
      );
      break;
    } catch (error) {
      failure ??= error;
      if (!isNoResponders(error)) {
        failure = error;
        break;
      }
    }
  }
  if (text === undefined) return failCall(mesh, started, requestError(failure, timeout));
  return recordAnswer(mesh, started, text);
}

const isNoResponders = (error: unknown): boolean =>
  (error instanceof RequestError ? error.cause : error) instanceof NoRespondersError || (error instanceof RequestError && error.isNoResponders());

function requestError(error: unknown, timeout: number) {
  const cause = error instanceof RequestError ? error.cause : error;
  if (error instanceof TimeoutError || cause instanceof TimeoutError) return { code: 'TIMEOUT', message: `no answer within ${timeout} ms` };
  if (isNoResponders(error)) {
    return { code: 'NO_RESPONDERS', message: 'no holder of the seat is listening for this verb' };
  }
  return { code: 'UNAVAILABLE', message: (error as Error).message };
}

/** Reads a seat's answer by the wire contract: `{"ok":true,"answer":…}` or `{"ok":false,"error":{…}}`. */
async function recordAnswer(mesh: CallsMesh, started: StartedCall, text: string): Promise<Call> {
  let reply: unknown;
  try {
    reply = JSON.parse(text);
  } catch {
    return failCall(mesh, started, { code: 'BAD_ANSWER', message: 'the seat answered with something that is not JSON' }, JSON.stringify(text));
  }
  const body = reply as { ok?: unknown; answer?: unknown; error?: { code?: unknown; message?: unknown } };
  if (body && typeof body === 'object' && body.ok === true) return finishCallWithText(mesh, started, JSON.stringify(body.answer ?? null));
  if (body && typeof body === 'object' && body.ok === false) {
    const code = typeof body.error?.code === 'string' ? body.error.code.slice(0, 100) : 'FAILED';
    const message = typeof body.error?.message === 'string' ? body.error.message.slice(0, 4000) : 'the seat answered ok: false';
    return failCall(mesh, started, { code, message });
  }
  return failCall(mesh, started, { code: 'BAD_ANSWER', message: 'the seat answered without {"ok":…}' }, text);
}

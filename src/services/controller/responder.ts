import { headers, type Msg, type Subscription } from '@nats-io/transport-node';
import { inSpan, messageContext, natsSpanAttributes, SpanKind } from '../../bus/trace-context.js';
import { Forbidden, Invalid } from '../../kernel/errors.js';
import { ID_PATTERN } from '../../kernel/ids.js';
import { isName } from '../../kernel/names.js';
import { CALLER_HEADER, OUTER_CALL_HEADER } from '../calls/forward.js';
import { callErrorOf, recordedCallOf, refuseCall } from '../calls/records.js';
import type { Mesh } from '../mesh.js';
import { invokeVerb, refuseUnknownVerb } from './invoke.js';
import { controllerVerb } from './verbs.js';

/** A NATS request body is at most 1 MiB: arguments, not payloads; NATS's own default limit. */
export const NATS_BODY_MAX = 1024 * 1024;
/** Requests handled at once by one replica; past this a request is answered BUSY at once, not queued without end. */
export const RESPONDER_IN_FLIGHT_MAX = 256;
/**
 * BUSY refusals of acts being recorded at once; past this a BUSY act is answered unrecorded (and
 * logged), so that recording refusals under a flood cannot itself grow without bound.
 */
export const BUSY_RECORDING_MAX = 64;
/** What a refused call keeps of a body it could not judge: the first 4 KiB, as text. */
const REFUSED_BODY_KEPT = 4096;

const BUSY = { code: 'BUSY', message: 'too many calls in flight; try again' };

/**
 * Who sent a request to the controller, read from its subject. `<root>.seat.<controller>.<verb>.<user>`
 * names the user: the shipped account (docs/nats-account.conf) lets each user publish only under its
 * own name there, so the NATS server, not the caller, vouches for it. `<root>.seat.<controller>.<verb>`
 * names nobody (`unnamed`): reading verbs are answered there, acting ones refused. The reply inbox
 * is never read: NATS does not check reply subjects, so anyone may give another user's inbox.
 */
export function callerFromSubject(prefix: string, subject: string): { verb: string; caller: string; named: boolean } {
  const rest = subject.startsWith(prefix) ? subject.slice(prefix.length).split('.') : [subject];
  const verb = rest[0] ?? '';
  const user = rest[1];
  if (user !== undefined && rest.length === 2 && isName(user)) return { verb, caller: user, named: true };
  return { verb, caller: 'unnamed', named: false };
}

const encoder = new TextEncoder();

/** The header naming the call a NATS answer belongs to, so a caller can read it back by id. */
export const CALL_HEADER = 'Mesh-Call';

function answer(mesh: Mesh, msg: Msg, body: unknown, callId?: string) {
  if (!msg.reply) return;
  let bytes = encoder.encode(JSON.stringify(body));
  const max = mesh.bus.nc.info?.max_payload ?? NATS_BODY_MAX;
  if (bytes.length > max) {
    bytes = encoder.encode(
      JSON.stringify({
        ok: false,
        error: { code: 'TOO_LARGE', message: `the answer is ${bytes.length} bytes, over the ${max} NATS carries; ask for a smaller page` },
      }),
    );
  }
  let h;
  if (callId) {
    h = headers();
    h.set(CALL_HEADER, callId);
  }
  msg.respond(bytes, h && { headers: h });
}

/** Reads a request body as the verb's arguments: empty is `{}`; over NATS_BODY_MAX or not JSON is Invalid. */
function readBody(data: Uint8Array): unknown {
  if (data.length > NATS_BODY_MAX) throw new Invalid(`the request body is ${data.length} bytes; at most ${NATS_BODY_MAX}`, 'body');
  if (data.length === 0) return {};
  const text = new TextDecoder().decode(data);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Invalid(`the request body is not JSON: ${(error as Error).message}`, 'body');
  }
}

/**
 * The caller of a request, from its subject; and for a call the controller forwarded to its own seat
 * (callVerb, sent on the controller's own named subject, which only the controller may publish to),
 * the original caller and the outer call, from the headers forwardCall sets.
 */
function whoCalls(mesh: Mesh, msg: Msg): { verb: string; caller: string; named: boolean; outerCallId: string | undefined } {
  const { verb, caller, named } = callerFromSubject(`${mesh.subjects.root}.seat.${mesh.config.controller}.`, msg.subject);
  if (!named || caller !== mesh.config.controller) return { verb, caller, named, outerCallId: undefined };
  const original = msg.headers?.get(CALLER_HEADER);
  const outer = msg.headers?.get(OUTER_CALL_HEADER);
  return {
    verb,
    caller: original && isName(original) ? original : caller,
    named,
    outerCallId: outer && ID_PATTERN.test(outer) ? outer : undefined,
  };
}

async function handle(mesh: Mesh, msg: Msg): Promise<void> {
  const { verb, caller, named, outerCallId } = whoCalls(mesh, msg);
  const door = 'NATS' as const;
  const known = controllerVerb(verb);
  let args: unknown;
  try {
    if (!msg.reply) throw new Invalid('a verb call needs a reply subject: send it as a request', 'reply');
    args = readBody(msg.data);
    if (known && (known.acting || known.recordsItsOwnCall) && !named) {
      throw new Forbidden(
        `${verb} acts under its caller's name: send it to ${mesh.subjects.seatVerbAs(mesh.config.controller, verb, '<your NATS user>')}, which only that user may publish to`,
      );
    }
  } catch (error) {
    // A refused read is not kept either; a refused act, or a verb nobody serves, is.
    if (known && !known.acting && !known.recordsItsOwnCall) return answer(mesh, msg, { ok: false, error: callErrorOf(error) });
    const raw = msg.data.length > NATS_BODY_MAX ? `(${msg.data.length} bytes, not kept)` : new TextDecoder().decode(msg.data.subarray(0, REFUSED_BODY_KEPT));
    const refused = await refuseCall(mesh, { seat: mesh.config.controller, verb, args: raw, caller, door, outerCallId }, callErrorOf(error));
    return answer(mesh, msg, { ok: false, error: callErrorOf(error) }, refused.id);
  }
  try {
    const { call, result } = known
      ? await invokeVerb(mesh, known, { args, caller, door, outerCallId })
      : await refuseUnknownVerb(mesh, verb, { args, caller, door, outerCallId });
    answer(mesh, msg, { ok: true, answer: result }, call?.id);
  } catch (error) {
    answer(mesh, msg, { ok: false, error: callErrorOf(error) }, recordedCallOf(error));
  }
}

export interface Responder {
  /** Takes no new request (the queue group's other replicas get them) and resolves once those in flight are answered. */
  stop(): Promise<void>;
}

/**
 * Answers the controller's verbs on `<subjects>.seat.<controller>.*`, in the queue group
 * `<controller>` so that one replica answers each request. Every request is a call, recorded
 * whatever its outcome. Answers `{"ok":true,"answer":…}` or `{"ok":false,"error":{"code","message"}}`.
 */
export function startResponder(mesh: Mesh): Responder {
  let inFlight = 0;
  let recordingBusy = 0;
  const pending = new Set<Promise<void>>();
  /** A BUSY answer; for an act (or a verb nobody serves) recorded as a refused call first, as any refusal is. */
  const refuseBusy = (msg: Msg) => {
    const { verb, caller, outerCallId } = whoCalls(mesh, msg);
    const known = controllerVerb(verb);
    const kept = !known || known.acting || known.recordsItsOwnCall;
    if (!kept || !msg.reply) return answer(mesh, msg, { ok: false, error: BUSY });
    if (recordingBusy >= BUSY_RECORDING_MAX) {
      mesh.logger.warn({ subject: msg.subject, caller }, 'controller verb refused BUSY, not recorded: too many refusals being recorded');
      return answer(mesh, msg, { ok: false, error: BUSY });
    }
    recordingBusy++;
    const args = msg.data.length > NATS_BODY_MAX ? `(${msg.data.length} bytes, not kept)` : new TextDecoder().decode(msg.data.subarray(0, REFUSED_BODY_KEPT));
    const done: Promise<void> = refuseCall(mesh, { seat: mesh.config.controller, verb: verb.slice(0, 200), args, caller, door: 'NATS', outerCallId }, BUSY)
      .then((refused) => answer(mesh, msg, { ok: false, error: BUSY }, refused.id))
      .catch((error) => {
        mesh.logger.error({ err: error, subject: msg.subject }, 'could not record a BUSY refusal');
        answer(mesh, msg, { ok: false, error: BUSY });
      })
      .finally(() => {
        recordingBusy--;
        pending.delete(done);
      });
    pending.add(done);
  };
  const callback = (err: Error | null, msg: Msg) => {
    if (err) return mesh.logger.error({ err }, 'controller verb subscription failed');
    if (inFlight >= RESPONDER_IN_FLIGHT_MAX) {
      mesh.logger.warn({ subject: msg.subject, inFlight }, 'controller verb refused: too many in flight');
      return refuseBusy(msg);
    }
    inFlight++;
    // A server span in the trace the request's traceparent names (an agent's), or a new trace.
    const { verb } = callerFromSubject(`${mesh.subjects.root}.seat.${mesh.config.controller}.`, msg.subject);
    const traced = { kind: SpanKind.SERVER, parent: messageContext(msg.headers), attributes: natsSpanAttributes(msg.subject) };
    const done: Promise<void> = inSpan(`controller ${verb.slice(0, 100)}`, traced, () => handle(mesh, msg))
      .catch((error) => mesh.logger.error({ err: error, subject: msg.subject }, 'controller verb request failed'))
      .finally(() => {
        inFlight--;
        pending.delete(done);
      });
    pending.add(done);
  };
  // Unnamed (reads from any client) and named by the sending user (acts): see callerFromSubject.
  const subs: Subscription[] = [mesh.subjects.seatVerbs(mesh.config.controller), mesh.subjects.seatVerbsNamed(mesh.config.controller)].map((subject) =>
    mesh.bus.nc.subscribe(subject, { queue: mesh.config.controller, callback }),
  );
  let stopped: Promise<void> | undefined;
  return {
    // Once: the gateway's drain calls it, and its stop again.
    stop: () =>
      (stopped ??= (async () => {
        await Promise.all(subs.map((sub) => sub.drain().catch(() => sub.unsubscribe())));
        await Promise.allSettled([...pending]);
      })()),
  };
}

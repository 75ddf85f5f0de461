import { headers, type Msg, type Subscription } from '@nats-io/transport-node';
import { Invalid } from '../../kernel/errors.js';
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

const NUID = /^[0-9A-Za-z]{22}$/;

/**
 * The caller of a NATS call, named from the inbox its answer goes to: `_INBOX.<caller>.…`, as a
 * client sets with its inbox prefix. A client's default inbox (`_INBOX.<nuid>.<token>`), any other
 * reply subject, or none, gives `unnamed`. A label, not proof: the shipped account config lets
 * each user subscribe only to its own inbox prefix, which is what makes it honest.
 */
export function callerFromInbox(reply: string | undefined): string {
  if (!reply) return 'unnamed';
  const tokens = reply.split('.');
  if (tokens[0] !== '_INBOX' || tokens.length < 3) return 'unnamed';
  const name = tokens[1]!;
  if (tokens.length === 3 && NUID.test(name)) return 'unnamed';
  return isName(name) ? name : 'unnamed';
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
 * The caller of a request, from its inbox; and for a call the controller forwarded to its own seat
 * (callVerb: the answer goes to the controller's own inbox), the original caller and the outer
 * call, from the headers forwardCall sets.
 */
function whoCalls(mesh: Mesh, msg: Msg): { caller: string; outerCallId: string | undefined } {
  const caller = callerFromInbox(msg.reply);
  if (caller !== mesh.config.controller) return { caller, outerCallId: undefined };
  const original = msg.headers?.get(CALLER_HEADER);
  const outer = msg.headers?.get(OUTER_CALL_HEADER);
  return { caller: original && isName(original) ? original : caller, outerCallId: outer && ID_PATTERN.test(outer) ? outer : undefined };
}

async function handle(mesh: Mesh, msg: Msg): Promise<void> {
  const verb = msg.subject.slice(msg.subject.lastIndexOf('.') + 1);
  const { caller, outerCallId } = whoCalls(mesh, msg);
  const door = 'NATS' as const;
  const known = controllerVerb(verb);
  let args: unknown;
  try {
    if (!msg.reply) throw new Invalid('a verb call needs a reply subject: send it as a request', 'reply');
    args = readBody(msg.data);
  } catch (error) {
    // A refused read is not kept either; a refused act, or a verb nobody serves, is.
    if (known && !known.acting && !known.recordsItsOwnCall) return answer(mesh, msg, { ok: false, error: callErrorOf(error) });
    const raw = msg.data.length > NATS_BODY_MAX ? `(${msg.data.length} bytes, not kept)` : new TextDecoder().decode(msg.data.subarray(0, 4096));
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
  stop(): Promise<void>;
}

/**
 * Answers the controller's verbs on `<subjects>.seat.<controller>.*`, in the queue group
 * `<controller>` so that one replica answers each request. Every request is a call, recorded
 * whatever its outcome. Answers `{"ok":true,"answer":…}` or `{"ok":false,"error":{"code","message"}}`.
 */
export function startResponder(mesh: Mesh): Responder {
  let inFlight = 0;
  const pending = new Set<Promise<void>>();
  const sub: Subscription = mesh.bus.nc.subscribe(mesh.subjects.seatVerbs(mesh.config.controller), {
    queue: mesh.config.controller,
    callback: (err, msg) => {
      if (err) return mesh.logger.error({ err }, 'controller verb subscription failed');
      if (inFlight >= RESPONDER_IN_FLIGHT_MAX) {
        mesh.logger.warn({ subject: msg.subject, inFlight }, 'controller verb refused: too many in flight');
        return answer(mesh, msg, { ok: false, error: { code: 'BUSY', message: 'too many calls in flight; try again' } });
      }
      inFlight++;
      const done: Promise<void> = handle(mesh, msg)
        .catch((error) => mesh.logger.error({ err: error, subject: msg.subject }, 'controller verb request failed'))
        .finally(() => {
          inFlight--;
          pending.delete(done);
        });
      pending.add(done);
    },
  });
  return {
    async stop() {
      await sub.drain().catch(() => sub.unsubscribe());
      await Promise.allSettled([...pending]);
    },
  };
}

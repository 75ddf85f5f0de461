import { headers, type Msg, type Subscription } from '@nats-io/transport-node';
import { inSpan, messageContext, natsSpanAttributes, SpanKind } from '../../bus/trace-context.js';
import { type DomainError, Forbidden, Invalid, NotFound } from '../../kernel/errors.js';
import { isName } from '../../kernel/names.js';
import type { Scope } from '../access/caller.js';
import { type ForwardedCheck, forwardedCheck } from '../access/forwarded.js';
import type { NatsUsers } from '../access/nats-users.js';
import { NATS_OPEN_WARNING, natsOpenBehindClosedDoors } from '../access/open-nats.js';
import { callErrorOf, recordedCallOf, refuseCall } from '../calls/records.js';
import type { Mesh } from '../mesh.js';
import { type AnyControllerVerb, mayRun, scopeRefusal } from '../verbs/verb.js';
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

/** What the unnamed subject's caller may do: read, and nothing that shows another caller's calls (see admissionOf). */
const UNNAMED_SCOPES: ReadonlySet<Scope> = new Set<Scope>(['read']);

/** Who sent a request: the verb it names, the caller, whether the subject named them, their scopes and the outer call. */
interface Asker {
  verb: string;
  caller: string;
  named: boolean;
  scopes: ReadonlySet<Scope>;
  outerCallId: string | undefined;
}

/**
 * The caller of a request, from its subject, and their scopes: a named user's from MESH_NATS_USERS_FILE
 * (`users`); the unnamed subject's, `read`. On the controller's own named subject (where callVerb
 * forwards to its own seat) the original caller, its scopes and the outer call come from the
 * headers forwardCall sets, believed only with a replica's proof (src/services/access/forwarded.ts):
 * without a good one the request is refused (`unproven`), whatever the subject says, so a client on
 * a NATS without permissions cannot borrow the controller's name. The inner verb runs with the
 * outer caller's scopes, never the controller's.
 */
async function whoCalls(mesh: Mesh, users: NatsUsers, forwarded: ForwardedCheck, msg: Msg): Promise<Asker | { unproven: string }> {
  const byName = whoCallsByName(mesh, users, msg);
  if (!onOwnSubject(mesh, msg.subject)) return byName;
  const proof = await forwarded.check(msg.subject, msg.headers, msg.data);
  if (!proof.ok) return { unproven: proof.why };
  return { ...byName, caller: proof.forwarded.caller, scopes: proof.forwarded.scopes, outerCallId: proof.forwarded.outerCallId };
}

/** The caller of a request not on the controller's own subject, from its subject alone (see whoCalls). */
function whoCallsByName(mesh: Mesh, users: NatsUsers, msg: Msg): Asker {
  const { verb, caller, named } = callerFromSubject(`${mesh.subjects.root}.seat.${mesh.config.controller}.`, msg.subject);
  return { verb, caller, named, scopes: named ? users.scopesOf(caller) : UNNAMED_SCOPES, outerCallId: undefined };
}

/** Whether a request is on the controller's own named subject, where only a proven forwarded call is taken. */
const onOwnSubject = (mesh: Mesh, subject: string): boolean => {
  const { caller, named } = callerFromSubject(`${mesh.subjects.root}.seat.${mesh.config.controller}.`, subject);
  return named && caller === mesh.config.controller;
};

/** Why a NATS request was refused before it became a call; each is counted (`mesh_nats_refused_total`), none kept. */
export type NatsRefusal = 'unnamed' | 'scope' | 'unknown-verb' | 'unproven';
export const NATS_REFUSALS = ['unnamed', 'scope', 'unknown-verb', 'unproven'] as const satisfies readonly NatsRefusal[];

/**
 * Whether a request may become a call at all. On the unnamed subject only reading verbs are
 * answered, and not those showing other callers' calls; a verb nobody serves is refused there.
 * Anywhere, a caller without the verb's scope (or, with a users file, an unlisted user) is refused.
 * Such refusals are answered and counted, never kept: a flood of them cannot push real calls out.
 */
function admissionOf(mesh: Mesh, known: AnyControllerVerb<Mesh> | undefined, asker: Asker): { reason: NatsRefusal; error: DomainError } | undefined {
  const named = (verb: string) => mesh.subjects.seatVerbAs(mesh.config.controller, verb, '<your NATS user>');
  if (!asker.named) {
    if (!known) return { reason: 'unknown-verb', error: new NotFound('verb', `${mesh.config.controller}.${asker.verb.slice(0, 200)}`) };
    if (known.acting || known.recordsItsOwnCall) {
      return {
        reason: 'unnamed',
        error: new Forbidden(`${known.name} acts under its caller's name: send it to ${named(known.name)}, which only that user may publish to`),
      };
    }
    if (known.showsOthersCalls) {
      return { reason: 'unnamed', error: new Forbidden(`${known.name} shows other callers' calls: ask on ${named(known.name)}, under your own name`) };
    }
  }
  if (asker.scopes.size === 0)
    return { reason: 'scope', error: new Forbidden(`NATS user ${asker.caller} has no scope on this controller (MESH_NATS_USERS_FILE)`) };
  if (known && !mayRun(known, asker.scopes)) return { reason: 'scope', error: scopeRefusal(asker.caller, known.name, known.scope) };
  return undefined;
}

async function handle(mesh: Mesh, users: NatsUsers, forwarded: ForwardedCheck, msg: Msg, refused: (reason: NatsRefusal) => void): Promise<void> {
  const asker = await whoCalls(mesh, users, forwarded, msg);
  if ('unproven' in asker) {
    refused('unproven');
    mesh.logger.warn({ subject: msg.subject, why: asker.unproven }, "a request on the controller's own subject without a replica's proof: refused");
    const error = new Forbidden(
      `only a replica forwards on ${msg.subject.slice(0, 300)} (callVerb, with a proof made with the replica key): ${asker.unproven}`,
    );
    return answer(mesh, msg, { ok: false, error: callErrorOf(error) });
  }
  const { verb, caller, scopes, outerCallId } = asker;
  const door = 'NATS' as const;
  const known = controllerVerb(verb);
  const refusal = admissionOf(mesh, known, asker);
  if (refusal) {
    refused(refusal.reason);
    return answer(mesh, msg, { ok: false, error: callErrorOf(refusal.error) });
  }
  let args: unknown;
  try {
    if (!msg.reply) throw new Invalid('a verb call needs a reply subject: send it as a request', 'reply');
    args = readBody(msg.data);
  } catch (error) {
    // A refused read is not kept either; a refused act, or a verb nobody serves, is.
    if (known && !known.acting && !known.recordsItsOwnCall) return answer(mesh, msg, { ok: false, error: callErrorOf(error) });
    const raw = msg.data.length > NATS_BODY_MAX ? `(${msg.data.length} bytes, not kept)` : new TextDecoder().decode(msg.data.subarray(0, REFUSED_BODY_KEPT));
    const recorded = await refuseCall(mesh, { seat: mesh.config.controller, verb, args: raw, caller, door, outerCallId }, callErrorOf(error));
    return answer(mesh, msg, { ok: false, error: callErrorOf(error) }, recorded.id);
  }
  try {
    const { call, result } = known
      ? await invokeVerb(mesh, known, { args, caller, scopes, door, outerCallId })
      : await refuseUnknownVerb(mesh, verb, { args, caller, scopes, door, outerCallId });
    answer(mesh, msg, { ok: true, answer: result }, call?.id);
  } catch (error) {
    answer(mesh, msg, { ok: false, error: callErrorOf(error) }, recordedCallOf(error));
  }
}

export interface Responder {
  /** Takes no new request (the queue group's other replicas get them) and resolves once those in flight are answered. */
  stop(): Promise<void>;
  /** Requests this replica refused before they became calls, by reason, since it started (for /metrics). */
  refused(): Readonly<Record<NatsRefusal, number>>;
}

/**
 * Answers the controller's verbs on `<subjects>.seat.<controller>.*`, in the queue group
 * `<controller>` so that one replica answers each request. A request the caller may make is a call,
 * recorded whatever its outcome (reads are not kept); one refused by admissionOf is only counted.
 * `users` gives each named NATS user its scopes. Answers `{"ok":true,"answer":…}` or `{"ok":false,"error":{"code","message"}}`.
 */
export function startResponder(mesh: Mesh, users: NatsUsers): Responder {
  const refusals: Record<NatsRefusal, number> = { unnamed: 0, scope: 0, 'unknown-verb': 0, unproven: 0 };
  const forwarded = forwardedCheck(mesh.replicaKeys);
  // Said once at start (and on /ready and /metrics while it lasts): the verbs answered here are open to anyone on such a NATS.
  if (natsOpenBehindClosedDoors(mesh.config, mesh.bus)) mesh.logger.warn({ nats: mesh.bus.server().url }, NATS_OPEN_WARNING);
  const refused = (reason: NatsRefusal) => {
    refusals[reason]++;
  };
  let inFlight = 0;
  let recordingBusy = 0;
  const pending = new Set<Promise<void>>();
  /** A BUSY answer; for an act (or a verb nobody serves) recorded as a refused call first, as any refusal is. */
  const refuseBusy = (msg: Msg) => {
    // A forwarded call is not recorded here (its proof is not checked while busy): its outer call, on the forwarding replica, records the BUSY.
    if (onOwnSubject(mesh, msg.subject)) return answer(mesh, msg, { ok: false, error: BUSY });
    const asker = whoCallsByName(mesh, users, msg);
    const { verb, caller, outerCallId } = asker;
    const known = controllerVerb(verb);
    const refusal = admissionOf(mesh, known, asker);
    if (refusal) {
      refused(refusal.reason);
      return answer(mesh, msg, { ok: false, error: callErrorOf(refusal.error) });
    }
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
    const done: Promise<void> = inSpan(`controller ${verb.slice(0, 100)}`, traced, () => handle(mesh, users, forwarded, msg, refused))
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
    refused: () => ({ ...refusals }),
    // Once: the gateway's drain calls it, and its stop again.
    stop: () =>
      (stopped ??= (async () => {
        await Promise.all(subs.map((sub) => sub.drain().catch(() => sub.unsubscribe())));
        await Promise.allSettled([...pending]);
      })()),
  };
}

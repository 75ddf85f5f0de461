import type { Logger } from 'pino';
import { isLeaderless } from '../../bus/retry.js';
import { DomainError, Forbidden, isStoreUnavailable, NotFound, STORE_UNAVAILABLE_MESSAGE, Unavailable } from '../../kernel/errors.js';
import type { Scope } from '../access/caller.js';
import { FORWARDING_VERB, judgeArgs } from '../calls/forward.js';
import { type Call, callErrorOf, endedOk, failCall, markRecorded, refuseCall, type StartedCall, startCall } from '../calls/records.js';
import type { MeshEvents } from '../events.js';
import { checkActing } from '../hand-acts/hand-acts.js';
import { type ActOutbox, writeToOutbox } from '../hand-acts/outbox-write.js';
import { actTogether, deliverSoon, type OutboxMesh } from '../outbox/outbox.js';
import { type ArgSpecs, type ArgsOf, type CallDoor, type ControllerVerb, mayRun, protocolOf, scopeRefusal } from '../verbs/verb.js';
import { controllerVerb } from './verbs.js';

/** What dispatching a verb needs of the mesh besides what the verb itself needs: the calls log, a logger, the events. */
export interface DispatchMesh extends OutboxMesh {
  config: { controller: string; replica: string };
  logger: Logger;
  events: MeshEvents;
}

/** Who calls, through which door, with what (not yet judged). */
export interface Invocation {
  args: unknown;
  caller: string;
  /** The caller's scopes, whatever named it (a token, a NATS user, the outer call of callVerb). */
  scopes: ReadonlySet<Scope>;
  door: CallDoor;
  /** The call that forwarded this one (callVerb to the controller's own seat). */
  outerCallId?: string | null;
}

export interface Outcome<T> {
  /** The call that records it; none for a reading verb, which is not kept. */
  call: Call | undefined;
  result: T;
}

/** A refused call keeps its verb as given, shortened, so a bad name is still visible. */
const VERB_LABEL_MAX = 200;

/**
 * The scope a call needs beyond its verb's own: callVerb to the controller's own seat runs the inner
 * verb with the caller's scopes, so it is refused here, before anything is recorded or sent, when
 * those lack the inner verb's scope. (The inner call is judged again where it runs.)
 */
function refusalOfForwarded(controller: string, invocation: Invocation, args: Record<string, unknown>): Forbidden | undefined {
  if (args.seat !== controller || typeof args.verb !== 'string') return undefined;
  const inner = controllerVerb(args.verb);
  if (inner && !mayRun(inner, invocation.scopes)) return scopeRefusal(invocation.caller, `${controller}.${inner.name}`, inner.scope);
  return undefined;
}

/**
 * The one path of every controller verb, whichever door it came through (GraphQL mutation or NATS
 * request). First the caller's scopes: without the verb's scope the call is refused (Forbidden,
 * not kept: a refusal is no call). callVerb forwarded by callVerb is refused too: it does not nest.
 * Then judges the arguments against the verb's declaration (unknown, missing or mistyped
 * argument, blank why: counted, not kept, and thrown); writes the call RUNNING (NATS away:
 * Unavailable, nothing done), runs the handler in one transaction with its hand-act and its OK end
 * written to the outbox (outbox/outbox.ts) — a verb that commits its own act writes them in its
 * own transaction through `outbox.endCall` — puts them at once, or records FAILED with the error
 * (and throws it); emits `acted` after an acting verb. A verb that records its own call (callVerb) is run without one here, and a reading
 * verb is not recorded at all: only acting and forwarded calls are kept (the bucket's 1000 / 14
 * days are theirs).
 */
export async function invokeVerb<D, A extends ArgSpecs, R>(mesh: D & DispatchMesh, verb: ControllerVerb<D, A, R>, invocation: Invocation): Promise<Outcome<R>> {
  const base = {
    seat: mesh.config.controller,
    verb: verb.name,
    args: invocation.args ?? {},
    caller: invocation.caller,
    door: invocation.door,
    outerCallId: invocation.outerCallId,
  };
  if (!mayRun(verb, invocation.scopes)) throw scopeRefusal(invocation.caller, verb.name, verb.scope);
  if (verb.recordsItsOwnCall && invocation.outerCallId) {
    throw new Forbidden(`${verb.name} does not nest: it was itself called by ${FORWARDING_VERB} (call ${invocation.outerCallId})`);
  }
  let args: ArgsOf<A>;
  const kept = verb.acting || verb.recordsItsOwnCall;
  try {
    // judgeArgs proves each argument has its declared type: the one place the declaration becomes the type.
    const judged = judgeArgs(mesh.config.controller, protocolOf(verb), invocation.args);
    if (verb.acting) Object.assign(judged, checkActing(judged));
    args = judged as ArgsOf<A>;
  } catch (error) {
    if (kept) await refuseCall(mesh, base, callErrorOf(error));
    throw error;
  }
  const asked = { caller: invocation.caller, scopes: invocation.scopes, door: invocation.door };
  if (verb.recordsItsOwnCall) {
    const refused = refusalOfForwarded(mesh.config.controller, invocation, args);
    if (refused) throw refused;
    const result = await verb.run(mesh, args, { ...asked, callId: '' });
    return { call: result as Call, result };
  }
  if (!verb.acting) {
    // Reads are not kept: a dashboard polling them must not push acting calls out of the bucket.
    return { call: undefined, result: await verb.run(mesh, args, { ...asked, callId: '' }) };
  }
  let started: StartedCall;
  try {
    started = await startCall(mesh, { ...base, args });
  } catch (error) {
    // Nothing was done: the call could not even be recorded RUNNING. Said so, never INTERNAL.
    mesh.logger.warn({ err: String(error), verb: verb.name }, 'controller verb refused: its call could not be recorded');
    throw new Unavailable(`${BUS_UNAVAILABLE_MESSAGE}: ${verb.name} was not done`, { cause: error });
  }
  const { call } = started;
  // The act's records (its hand-act, its call's end) go to the outbox in the act's own transaction.
  const outbox: ActOutbox = { tx: mesh.db, ids: [] };
  const run = (db: OutboxMesh['db']) => verb.run({ ...mesh, db, outbox }, args, { ...asked, callId: call.id });
  let result: R;
  let finished: Call;
  try {
    if (verb.commitsItsOwnAct || verb.actsOutsideTheStore) {
      let endedWithin: Call | undefined;
      outbox.endCall = async (tx, answer) => {
        endedWithin = endedOk(started, answer);
        await writeToOutbox(tx, 'calls', call.id, JSON.stringify(endedWithin));
      };
      result = await run(mesh.db);
      if (endedWithin) finished = endedWithin;
      else {
        // A JetStream act (or a verb that did not end its call in its transaction): its end follows it.
        if (verb.commitsItsOwnAct) mesh.logger.error({ verb: verb.name, call: call.id }, 'a verb that commits its own act did not end its call in it');
        finished = endedOk(started, result);
        await writeToOutbox(mesh.db, 'calls', call.id, JSON.stringify(finished));
      }
    } else {
      ({ result, finished } = await actTogether(mesh.db, async (tx) => {
        outbox.tx = tx;
        const done = await run(tx);
        const ended = endedOk(started, done);
        await writeToOutbox(tx, 'calls', call.id, JSON.stringify(ended));
        return { result: done, finished: ended };
      }));
    }
  } catch (caught) {
    const error = awayAsUnavailable(caught, verb.name);
    if (error instanceof Unavailable) mesh.logger.warn({ err: String(caught), verb: verb.name, call: call.id }, `controller verb failed: ${error.message}`);
    else if (!(error instanceof DomainError)) mesh.logger.error({ err: error, verb: verb.name, call: call.id }, 'controller verb failed');
    await failCall(mesh, started, callErrorOf(error)).catch((err) => mesh.logger.error({ err, call: call.id }, 'could not record a failed call'));
    markRecorded(error, call.id);
    throw error;
  }
  outbox.ids.push(call.id);
  await deliverSoon(mesh, outbox.ids);
  mesh.events.emit('acted', verb.name);
  return { call: finished, result };
}

/** What a caller is told when NATS cannot take a call's record. */
const BUS_UNAVAILABLE_MESSAGE = 'NATS is unavailable';

/**
 * An act that failed because the store or NATS was away is said so (Unavailable, naming which):
 * it did not commit, so nothing was done. Any other error is left as it is.
 */
function awayAsUnavailable(error: unknown, verb: string): unknown {
  if (error instanceof DomainError) return error;
  if (isStoreUnavailable(error)) return new Unavailable(`${STORE_UNAVAILABLE_MESSAGE}: ${verb} was not done`, { cause: error });
  if (isLeaderless(error)) return new Unavailable(`${BUS_UNAVAILABLE_MESSAGE}: ${verb} was not done`, { cause: error });
  return error;
}

/** A request for a verb the controller does not serve: counted as a refusal under the name asked (never kept), and thrown. */
export async function refuseUnknownVerb(mesh: DispatchMesh, name: string, invocation: Invocation): Promise<never> {
  const error = new NotFound('verb', `${mesh.config.controller}.${name}`);
  await refuseCall(
    mesh,
    {
      seat: mesh.config.controller,
      verb: String(name).slice(0, VERB_LABEL_MAX),
      args: invocation.args ?? {},
      caller: invocation.caller,
      door: invocation.door,
      outerCallId: invocation.outerCallId,
    },
    callErrorOf(error),
  );
  throw error;
}

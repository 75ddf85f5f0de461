import { callVerb, judgeArgs } from '../calls/forward.js';
import {
  CALL_STATES,
  CALLS_PAGE_DEFAULT,
  callById,
  failCall,
  finishCall,
  listCalls,
  markRecorded,
  refuseCall,
  seatNamesFor,
  startCall,
  type Call,
  type CallDoor,
  type CallError,
  type CallState,
} from '../calls/records.js';
import { resetConsumer } from '../consumers/reset.js';
import { DomainError, Invalid, NotFound } from '../../kernel/errors.js';
import { DURATION_KINDS, summarise, type DurationKind } from '../durations/durations.js';
import { appendHandAct, checkActing, listHandActs, repeatedCauses } from '../hand-acts/hand-acts.js';
import type { Mesh } from '../mesh.js';
import { closePlan, listPlans, PLAN_STATES, push, stopPlan, type PlanState } from '../plans/plans.js';
import { controllerVerb } from './verbs.js';

/** Who asked, through which door, and the call that records it. */
export interface VerbContext {
  caller: string;
  door: CallDoor;
  callId: string;
}

/** Runs one controller verb on judged arguments and answers its result (JSON-serialisable). */
export type VerbHandler = (mesh: Mesh, args: Record<string, any>, ctx: VerbContext) => Promise<unknown>;

export interface Invocation {
  verb: string;
  args: unknown;
  caller: string;
  door: CallDoor;
}

export interface Outcome<T = unknown> {
  call: Call;
  result: T;
}

const since = (value: unknown) => (typeof value === 'string' ? new Date(value) : undefined);

function oneOf<T extends string>(value: unknown, allowed: readonly T[], field: string): T | undefined {
  if (value === undefined || value === null) return undefined;
  if (!allowed.includes(value as T)) throw new Invalid(`${field} must be one of ${allowed.join(', ')}`, field);
  return value as T;
}

/** An acting verb's hand-act, appended after its work, carrying its why and its call. */
async function leaveTrace(mesh: Mesh, args: Record<string, any>, ctx: VerbContext, act: string, target: string | null) {
  return appendHandAct(mesh, { actor: ctx.caller, act, target, why: args.why, cause: args.cause, condition: args.condition, callId: ctx.callId });
}

const handlers: Record<string, VerbHandler> = {
  async push(mesh, args, ctx) {
    const plan = await push(mesh, { seat: args.seat, build: args.build, behind: args.behind, tiers: args.tiers });
    await leaveTrace(mesh, args, ctx, 'push', `${plan.id} (${plan.build} to ${plan.seat})`);
    return plan;
  },
  async stopPlan(mesh, args, ctx) {
    const plan = await stopPlan(mesh, args.id);
    await leaveTrace(mesh, args, ctx, 'stopPlan', plan.id);
    return plan;
  },
  async closePlan(mesh, args, ctx) {
    const plan = await closePlan(mesh, args.id);
    await leaveTrace(mesh, args, ctx, 'closePlan', plan.id);
    return plan;
  },
  async resetConsumer(mesh, args, ctx) {
    const reset = await resetConsumer(mesh, { stream: args.stream, consumer: args.consumer, startSeq: args.startSeq, startTime: args.startTime });
    await leaveTrace(mesh, args, ctx, 'resetConsumer', `${reset.stream}/${reset.consumer}`);
    return reset;
  },
  async recordHandAct(mesh, args, ctx) {
    return leaveTrace(mesh, args, ctx, args.act, args.target ?? null);
  },
  async call(mesh, args) {
    return callById(mesh, args.id);
  },
  async calls(mesh, args) {
    const first = args.first ?? CALLS_PAGE_DEFAULT;
    const state = oneOf<CallState>(args.state, CALL_STATES, 'state');
    const seats = args.seat == null ? undefined : await seatNamesFor(mesh.db, args.seat);
    const page = await listCalls(mesh, { seats, state, caller: args.caller }, { after: args.after, limit: first + 1 });
    return { calls: page.slice(0, first), hasNextPage: page.length > first };
  },
  async handActs(mesh, args) {
    const first = args.first ?? CALLS_PAGE_DEFAULT;
    const page = listHandActs(mesh, { since: since(args.since), cause: args.cause }, { after: args.after, limit: first + 1 });
    return { handActs: page.slice(0, first), hasNextPage: page.length > first };
  },
  async repeatedCauses(mesh, args) {
    return repeatedCauses(mesh, since(args.since));
  },
  async plans(mesh, args) {
    return listPlans(mesh.db, { state: oneOf<PlanState>(args.state, PLAN_STATES, 'state'), first: args.first });
  },
  // The last composition, at once: the verb never composes while its caller waits.
  async status(mesh) {
    const composition = mesh.status.current();
    if (!composition) throw new Unavailable('no composition has been heard yet; the serving replica composes at start');
    return composition;
  },
  async durations(mesh, args) {
    const kinds = DURATION_KINDS.map((k) => k.toUpperCase());
    const kind = oneOf(typeof args.kind === 'string' ? args.kind.toUpperCase() : args.kind, kinds, 'kind');
    return summarise(mesh.db, mesh.config, kind ? (kind.toLowerCase() as DurationKind) : undefined, since(args.since));
  },
};

export const errorOf = (error: unknown): CallError =>
  error instanceof DomainError ? { code: error.code, message: error.message } : { code: 'INTERNAL', message: 'internal error; the gateway logged it' };

/**
 * The one path of every controller verb, whichever door it came through (GraphQL mutation or NATS
 * request). Judges the arguments against the verb's row in CONTROLLER_VERBS (unknown verb or
 * argument, missing or mistyped argument, blank why: recorded FAILED and thrown); writes the call
 * RUNNING, runs the handler, records OK with the answer or FAILED with the error (and throws it);
 * emits `acted` after an acting verb. callVerb records the forwarded call itself, under the target seat.
 */
export async function invokeControllerVerb<T = unknown>(mesh: Mesh, invocation: Invocation): Promise<Outcome<T>> {
  const controller = mesh.config.controller;
  const base = { seat: controller, verb: String(invocation.verb).slice(0, 200), args: invocation.args ?? {}, caller: invocation.caller, door: invocation.door };
  const verb = controllerVerb(invocation.verb);
  let args: Record<string, any>;
  try {
    if (!verb) throw new NotFound('verb', `${controller}.${invocation.verb}`);
    args = judgeArgs(controller, verb, invocation.args);
    if (verb.acting) Object.assign(args, checkActing(args));
    if (verb.name !== 'callVerb' && !handlers[verb.name]) {
      throw new Unavailable(`${verb.name} is not served by this build yet`);
    }
  } catch (error) {
    markRecorded(error, (await refuseCall(mesh, base, errorOf(error))).id);
    throw error;
  }
  if (verb!.name === 'callVerb') {
    const call = await callVerb(mesh, { seat: args.seat, verb: args.verb, args: args.args, timeoutMs: args.timeoutMs, caller: invocation.caller, door: invocation.door });
    return { call, result: call as T };
  }
  const call = await startCall(mesh, { ...base, args });
  let result: unknown;
  try {
    result = await handlers[verb!.name]!(mesh, args, { caller: invocation.caller, door: invocation.door, callId: call.id });
  } catch (error) {
    if (!(error instanceof DomainError)) mesh.logger.error({ err: error, verb: verb!.name, call: call.id }, 'controller verb failed');
    await failCall(mesh, call, errorOf(error)).catch((err) => mesh.logger.error({ err, call: call.id }, 'could not record a failed call'));
    markRecorded(error, call.id);
    throw error;
  }
  const finished = await finishCall(mesh, call, result);
  if (verb!.acting) mesh.events.emit('acted', verb!.name);
  return { call: finished, result: result as T };
}

/** What a verb cannot answer yet: a verb of the table without a handler, or no composition heard. */
class Unavailable extends DomainError {
  override name = 'Unavailable';
  readonly code = 'UNAVAILABLE';
}

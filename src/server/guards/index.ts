import { drainGuard, hostGuard, originGuard, targetGuard } from './arrival.js';
import type { Guard, GuardEnv, RequestFacts, Stage } from './guard.js';
import { callerGuard } from './identity.js';
import { capsGuard, operationsGuard } from './live.js';
import { paramsGuard, persistedGuard } from './operation.js';
import type { Refusal } from './refusal.js';
import { bodyGuard, csrfGuard, rateGuard } from './request.js';

/**
 * Every check a request meets, once, in the order it meets them. Each door (POST, GET, the status
 * fast path, multipart, SSE, graphql-ws' connection and its operations) runs this one list, a
 * stage at a time as it learns the request, and answers a refusal in its own way.
 */
export const GUARDS: readonly Guard[] = [
  targetGuard,
  hostGuard,
  drainGuard,
  originGuard,
  callerGuard,
  capsGuard,
  operationsGuard,
  bodyGuard,
  csrfGuard,
  rateGuard,
  paramsGuard,
  persistedGuard,
];

/** The guards of one gateway: judges a request's facts at a stage. */
export interface Guards {
  /** The first refusal of a guard of `stage` that holds at the facts' door, or undefined. */
  judge(stage: Stage, facts: RequestFacts): Refusal | undefined;
  /** Stages in order, the first refusal of any (a door that learns them all at once). */
  judgeAll(stages: readonly Stage[], facts: RequestFacts): Refusal | undefined;
}

/** The list bound to a gateway's settings and counts. */
export function guardsOf(env: GuardEnv, guards: readonly Guard[] = GUARDS): Guards {
  const judge = (stage: Stage, facts: RequestFacts): Refusal | undefined => {
    for (const guard of guards) {
      if (guard.stage !== stage || guard.at[facts.door] !== true) continue;
      const refusal = guard.judge(facts, env);
      if (refusal) return refusal;
    }
    return undefined;
  };
  return {
    judge,
    judgeAll(stages, facts) {
      for (const stage of stages) {
        const refusal = judge(stage, facts);
        if (refusal) return refusal;
      }
      return undefined;
    },
  };
}

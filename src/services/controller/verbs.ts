import type { Scope } from '../access/caller.js';
import { callByIdVerb, callsVerb, callVerbVerb } from '../calls/verbs.js';
import { resetConsumerVerb } from '../consumers/verbs.js';
import { durationsVerb } from '../durations/verbs.js';
import { handActsVerb, recordHandActVerb, repeatedCausesVerb } from '../hand-acts/verbs.js';
import { forgetMachineVerb } from '../machines/verbs.js';
import type { Mesh } from '../mesh.js';
import { closePlanVerb, plansVerb, pushVerb, resumePlanVerb, stopPlanVerb } from '../plans/verbs.js';
import { removeAliasVerb, retireSeatVerb } from '../seats/verbs.js';
import { statusVerb } from '../status/verbs.js';
import type { Verb } from '../verbs/protocol.js';
import { type AnyControllerVerb, protocolOf } from '../verbs/verb.js';

/**
 * Every verb the controller serves, each defined once in its domain's `verbs.ts`. Its seat row is
 * seeded from this list, the GraphQL mutations take their arguments from the same objects, and
 * the NATS responder on `<subjects>.seat.<controller>.*` looks verbs up here by name.
 */
const REGISTERED_VERBS: readonly AnyControllerVerb<Mesh>[] = [
  pushVerb,
  stopPlanVerb,
  resumePlanVerb,
  closePlanVerb,
  resetConsumerVerb,
  recordHandActVerb,
  removeAliasVerb,
  retireSeatVerb,
  forgetMachineVerb,
  callVerbVerb,
  callByIdVerb,
  callsVerb,
  handActsVerb,
  repeatedCausesVerb,
  plansVerb,
  statusVerb,
  durationsVerb,
];

/** The controller's verbs as its seat row keeps them. */
export const CONTROLLER_VERBS: Verb[] = REGISTERED_VERBS.map(protocolOf);

/** The scope each verb needs, by name (docs/access.md lists them). */
export const CONTROLLER_VERB_SCOPES: Readonly<Record<string, Scope>> = Object.fromEntries(REGISTERED_VERBS.map((verb) => [verb.name, verb.scope]));

/** The controller's verb of that name, or undefined. */
export const controllerVerb = (name: string): AnyControllerVerb<Mesh> | undefined => REGISTERED_VERBS.find((v) => v.name === name);

import { EventEmitter } from 'node:events';

/**
 * Notifications inside one replica: they start no work of their own. The one listener in src/ is
 * the composer (src/services/status/composing/composer.ts), which turns `news`, `acted` and `plan-changed`
 * into a request for a composition; tests listen too. Work that must follow a change is an
 * explicit call — a plan that opens has its rollout started by `push`/`closePlan` themselves.
 * In-process only; across replicas the bus carries it.
 */
export interface MeshEventMap {
  /** A plan became OPEN (pushed, or released from behind another); its rollout is started by the same call. */
  'plan-opened': [planId: string];
  /** A plan's state, tier or applies changed, by a verb, a report or a time-out. */
  'plan-changed': [planId: string];
  /** An acting verb finished (its hand-act is written). */
  acted: [act: string];
  /**
   * News was ingested: machine heartbeats or reports, or build news. `machines` names every machine
   * whose heartbeat the batch wrote (none for reports and builds), so the composer re-reads only those.
   */
  news: [kind: 'machine' | 'build', machines?: readonly string[]];
}

export class MeshEvents extends EventEmitter<MeshEventMap> {}

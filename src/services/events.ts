import { EventEmitter } from 'node:events';

/**
 * What happens inside one replica that other parts react to: a plan opening starts its rollout,
 * news and acting verbs ask for a composition. In-process only; across replicas the bus carries it.
 */
export interface MeshEventMap {
  /** A plan became OPEN (pushed, or released from behind another): its first tier can be applied. */
  'plan-opened': [planId: string];
  /** A plan changed state by a verb or a report. */
  'plan-changed': [planId: string];
  /** An acting verb finished (its hand-act is written). */
  acted: [act: string];
  /** News was ingested: machine heartbeats or reports, or build news. */
  news: [kind: 'machine' | 'build'];
}

export class MeshEvents extends EventEmitter<MeshEventMap> {}

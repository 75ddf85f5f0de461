import type { Logger } from 'pino';
import type { Buckets } from '../bus/buckets.js';
import type { KvView } from '../bus/kv-view.js';
import type { Bus } from '../bus/nats.js';
import type { Subjects } from '../bus/subjects.js';
import type { Config } from '../config.js';
import type { Store } from '../store/db.js';
import type { ReplicaKeys } from './access/replica-key.js';
import type { CallSummary } from './calls/records.js';
import type { MeshEvents } from './events.js';
import type { HandAct } from './hand-acts/hand-acts.js';
import type { NewsHearing } from './news/hearing.js';
import type { PlanChanges } from './plans/changes.js';
import type { Leases } from './replicas/leases.js';
import type { Catalogue } from './seats/catalogue.js';
import type { RunningStatusFeed } from './status/live/feed.js';
import type { StatusCountSeries } from './status/looking-back/counts.js';
import type { StatusSeal } from './status/replicating/seal.js';

/**
 * The running gateway's dependencies, made once by src/gateway.ts. Only the layers above services
 * (schema, resolvers, transports) and the controller's registry take it whole: each domain under
 * src/services/<domain>/ declares the few capabilities it needs (e.g. `CallsMesh`, `PlansMesh`),
 * which this type satisfies structurally — so no domain imports this file and no cycle runs through it.
 */
export interface Mesh {
  config: Config;
  db: Store;
  bus: Bus;
  subjects: Subjects;
  catalogue: Catalogue;
  logger: Logger;
  events: MeshEvents;
  /** The controller's KV buckets: calls, hand-acts, leases. */
  buckets: Buckets;
  /** This replica's in-memory views of the calls and hand-act buckets, kept by watches. */
  views: { calls: KvView<CallSummary>; handActs: KvView<HandAct> };
  /** This replica's lease, and whether it holds the serving lease. */
  leases: Leases;
  /** The key the replicas share through the store, to prove to each other what they publish (src/services/access/replica-key.ts). */
  replicaKeys: ReplicaKeys;
  /** The status's seal: what this replica publishes when serving is sealed with it; what it reads is taken only with it (and refusals counted). */
  statusSeal: StatusSeal;
  /** How far the news is written (the news stream's watermark): the instant machines' states are judged at. */
  hearing: NewsHearing;
  /** The last status composition this replica heard, and each new one as it comes. */
  status: RunningStatusFeed;
  /** Plan changes announced on NATS by whichever replica made them, for planChanged's followers. */
  planChanges: PlanChanges;
  /** The machines UP, LATE and SILENT over the kept history, one point per grain: what statusCounts answers from. */
  statusCounts: StatusCountSeries;
}

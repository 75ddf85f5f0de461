import type { Logger } from 'pino';
import type { Subjects } from '../../bus/subjects.js';
import { isTransientConflict } from '../../kernel/sqlstate.js';
import type { Store } from '../../store/db.js';
import { type Duration, heartbeatGaps, recordDurations } from '../durations/durations.js';
import type { MeshEvents } from '../events.js';
import { withoutControllerClaims } from '../machines/claims.js';
import { type Heartbeat, recordHeartbeats } from '../machines/machines.js';
import { applyReports, type Report, type RolloutMesh } from '../plans/rollout.js';
import type { Leases } from '../replicas/leases.js';
import { type BuildNews, recordBuildNews } from './builds.js';
import { HEARTBEAT_CHUNK_PAIRS } from './limits.js';
import type { News } from './wire.js';

/** What ingesting news needs of the mesh: the store, the bus it arrives on, and what a rollout needs for reports. */
export interface IngestMesh extends RolloutMesh {
  db: Store;
  subjects: Pick<Subjects, 'root' | 'planApply'>;
  logger: Logger;
  events: MeshEvents;
  config: { controller: string; heartbeatSeconds: number };
  leases: Pick<Leases, 'continuousSince'>;
}

/** News the wire contract accepts. */
export type Judged = Exclude<News, { type: 'malformed' }>;

async function retryOnce<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    // A deadlock or serialization failure: another replica's batch crossed ours.
    if (!isTransientConflict(error)) throw error;
    return work();
  }
}

/**
 * Cuts heartbeats into runs of at most HEARTBEAT_CHUNK_PAIRS (machine, module) pairs, every beat of
 * one machine in the same run (recordHeartbeats writes a machine once however many beats it has).
 */
function chunked(beats: Heartbeat[]): Heartbeat[][] {
  const byMachine = new Map<string, Heartbeat[]>();
  for (const beat of beats) {
    const of = byMachine.get(beat.machine);
    if (of) of.push(beat);
    else byMachine.set(beat.machine, [beat]);
  }
  const chunks: Heartbeat[][] = [];
  let current: Heartbeat[] = [];
  let pairs = 0;
  for (const of of byMachine.values()) {
    const n = Math.max(1, ...of.map((b) => b.modules.length));
    if (current.length && pairs + n > HEARTBEAT_CHUNK_PAIRS) {
      chunks.push(current);
      current = [];
      pairs = 0;
    }
    current.push(...of);
    pairs += n;
  }
  if (current.length) chunks.push(current);
  return chunks;
}

/**
 * Writes one batch of judged news: heartbeats in one transaction (machines and assignments) with
 * their late gaps, build news with build durations, reports through the rollout. Emits 'news'
 * with the machines whose beats were written, for the composer to re-read only those.
 */
export async function ingestBatch(mesh: IngestMesh, batch: readonly Judged[]): Promise<void> {
  const beats: Heartbeat[] = [];
  const reports: Report[] = [];
  const builds: BuildNews[] = [];
  for (const news of batch) {
    if (news.type === 'heartbeat') beats.push(news.heartbeat);
    else if (news.type === 'report') reports.push(news.report);
    else builds.push(news.build);
  }
  const durations: Duration[] = [];
  for (const chunk of chunked(beats)) {
    const recorded = await retryOnce(() => recordHeartbeats(mesh.db, withoutControllerClaims(chunk, mesh)));
    durations.push(...heartbeatGaps(recorded, mesh.config.heartbeatSeconds, mesh.leases.continuousSince()));
  }
  if (builds.length) durations.push(...(await retryOnce(() => recordBuildNews(mesh.db, builds))));
  await recordDurations(mesh.db, durations);
  if (reports.length) {
    const applied = await retryOnce(() => applyReports(mesh, reports));
    if (applied.unmatched) mesh.logger.info({ unmatched: applied.unmatched }, 'reports matching no apply sent were ignored');
  }
  if (beats.length || reports.length) mesh.events.emit('news', 'machine', [...new Set(beats.map((b) => b.machine))]);
  if (builds.length) mesh.events.emit('news', 'build');
}

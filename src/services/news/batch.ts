import type { Logger } from 'pino';
import type { Subjects } from '../../bus/subjects.js';
import { isTransientConflict } from '../../kernel/sqlstate.js';
import type { Store } from '../../store/db.js';
import { type Duration, heartbeatGaps, recordDurations } from '../durations/durations.js';
import type { MeshEvents } from '../events.js';
import { changesStored, type StoredMachine, storedMachines } from '../machines/changes.js';
import { withoutControllerClaims } from '../machines/claims.js';
import { type Heartbeat, type HeartbeatRecorded, recordHeartbeats } from '../machines/machines.js';
import { applyReports, type Report, type RolloutMesh } from '../plans/rollout.js';
import type { Leases } from '../replicas/leases.js';
import { type BuildNews, recordBuildNews } from './builds.js';
import type { NewsHearing } from './hearing.js';
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
  /** This replica's memory of last-heard, and what it owes the store's checkpoint. */
  hearing: Pick<NewsHearing, 'machines' | 'owed'>;
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
 * Each beat with the one heard before it (this replica's memory, else the store's checkpoint of a
 * machine it has not heard), in time order, each noted in memory as it goes: what `heartbeatGaps`
 * judges lateness from.
 */
function hearBeats(mesh: IngestMesh, beats: readonly Heartbeat[], stored: ReadonlyMap<string, StoredMachine>): HeartbeatRecorded[] {
  const heard = mesh.hearing.machines;
  const now = Date.now();
  return [...beats]
    .sort((a, b) => a.at.getTime() - b.at.getTime())
    .map((beat) => {
      const atMs = beat.at.getTime();
      const before = heard.before(beat.machine, atMs);
      const fromStore = before || heard.lastMs(beat.machine) !== undefined ? undefined : stored.get(beat.machine);
      heard.note(beat.machine, atMs, now);
      const previousAt = before?.atMs ?? fromStore?.lastHeardMs;
      const previousWrittenAt = before?.takenMs ?? fromStore?.writtenMs;
      return {
        machine: beat.machine,
        previousAt: previousAt === undefined ? undefined : new Date(previousAt),
        previousWrittenAt: previousWrittenAt === undefined ? undefined : new Date(previousWrittenAt),
        at: beat.at,
      };
    });
}

/**
 * Takes a batch's heartbeats in (issue 37): compared with the store in one statement that writes
 * nothing, the beats of machines whose latest beat changes what is stored (new, another site, other
 * modules or claims) are written (`recordHeartbeats`); every other beat is noted in memory and
 * returned, owed to the checkpoint once the whole batch is written. A beat older than the last
 * heard changes nothing. Returns the late gaps, the machines written and the beats owed.
 */
async function takeBeats(mesh: IngestMesh, batch: readonly Heartbeat[]): Promise<{ gaps: Duration[]; written: string[]; owed: Heartbeat[] }> {
  if (batch.length === 0) return { gaps: [], written: [], owed: [] };
  const beats = withoutControllerClaims(batch, mesh);
  const latest = new Map<string, Heartbeat>();
  for (const beat of beats) if (beat.at.getTime() >= (latest.get(beat.machine)?.at.getTime() ?? Number.NEGATIVE_INFINITY)) latest.set(beat.machine, beat);
  const stored = await retryOnce(() => storedMachines(mesh.db, [...latest.keys()]));
  const heard = mesh.hearing.machines;
  const changing = new Set<string>();
  for (const [machine, beat] of latest) {
    const row = stored.get(machine);
    // Overtaken: a newer beat stands (heard by this replica's follower, to be written by its batch).
    // Never for a machine not stored yet: its beats owed would update no row, and be lost.
    if (row && beat.at.getTime() < (heard.lastMs(machine) ?? Number.NEGATIVE_INFINITY)) continue;
    if (changesStored(beat, row)) changing.add(machine);
  }
  const written = beats.filter((b) => changing.has(b.machine));
  for (const chunk of chunked(written)) await retryOnce(() => recordHeartbeats(mesh.db, chunk));
  const recorded = hearBeats(mesh, beats, stored);
  const owed = beats.filter((b) => !changing.has(b.machine));
  return { gaps: heartbeatGaps(recorded, mesh.config.heartbeatSeconds, mesh.leases.continuousSince()), written: [...changing], owed };
}

/**
 * Writes one batch of judged news: heartbeats as `takeBeats` takes them, with their late gaps,
 * build news with build durations, reports through the rollout. Emits 'news' with the machines
 * written, for the composer to re-read only those; a beat that changed nothing stored reaches the
 * composer as a machine heard later (`NewsHearing.onHeard`), with no read of the store.
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
  const { gaps: durations, written, owed } = await takeBeats(mesh, beats);
  if (builds.length) durations.push(...(await retryOnce(() => recordBuildNews(mesh.db, builds))));
  await recordDurations(mesh.db, durations);
  if (reports.length) {
    const applied = await retryOnce(() => applyReports(mesh, reports));
    if (applied.unmatched) mesh.logger.info({ unmatched: applied.unmatched }, 'reports matching no apply sent were ignored');
  }
  // Owed to the checkpoint only once the whole batch is written: a batch dropped half-way (the
  // store gone) is read again, and its beats owed twice would be counted twice.
  for (const beat of owed) mesh.hearing.owed.owe(beat.machine, beat.at.getTime());
  if (written.length || reports.length) mesh.events.emit('news', 'machine', written);
  if (builds.length) mesh.events.emit('news', 'build');
}

import { DiscardPolicy, type JetStreamManager, RetentionPolicy, StorageType, type StreamConfig } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { replicasRefusal, updateStream } from './buckets.js';
import { storageRefusal } from './storage.js';

/**
 * The status stream keeps at most this many bytes (1 GiB, as the news stream): about a day of a
 * 10,000-machine mesh's snapshots (one a minute, about 0.6 MiB gzipped) and deltas; past it the
 * oldest go first (discard old), so a larger mesh keeps less than MESH_STATUS_HISTORY_H.
 */
export const STATUS_STREAM_MAX_BYTES = 1024 * 1024 * 1024;
/** How long the stream keeps compositions unless MESH_STATUS_HISTORY_H says otherwise: a day. */
export const STATUS_HISTORY_DEFAULT_H = 24;

const NANOS_PER_MS = 1_000_000;

/** The stream of a controller's compositions, as snapshots and deltas. */
export const statusStreamName = (controller: string): string => `${controller}_status`;

/** The subjects of the status stream: under the controller's own name, so two controllers never overlap. */
export interface StatusStreamSubjects {
  snapshot: string;
  delta: string;
  all: string;
}

const statusStreamSubjects = (root: string, controller: string): StatusStreamSubjects => ({
  snapshot: `${root}.status.${controller}.snapshot`,
  delta: `${root}.status.${controller}.delta`,
  all: `${root}.status.${controller}.>`,
});

export interface StatusStreamOptions {
  /** How long compositions are kept, in hours (MESH_STATUS_HISTORY_H). */
  historyHours?: number;
  /** How many servers keep the stream (MESH_KV_REPLICAS at merge); 1 on a single server. */
  replicas?: number;
  /** What the stream may hold (MESH_STATUS_MAX_BYTES), reserved in the server's store times the replicas. */
  maxBytes?: number;
  logger?: Logger;
}

type Limits = Pick<StreamConfig, 'max_bytes' | 'max_age' | 'discard' | 'num_replicas'>;

/** What the stream's limits must be; read and updated at start where they differ. */
const statusStreamLimits = (options: StatusStreamOptions = {}): Limits => ({
  max_bytes: options.maxBytes ?? STATUS_STREAM_MAX_BYTES,
  max_age: Math.round((options.historyHours ?? STATUS_HISTORY_DEFAULT_H) * 3600 * 1000) * NANOS_PER_MS,
  discard: DiscardPolicy.Old,
  num_replicas: options.replicas ?? 1,
});

/**
 * Ensures the controller's status stream `<controller>_status` (file storage, limits retention,
 * `statusStreamLimits`) exists over `statusStreamSubjects`, updating limits that differ (NATS 2.9:
 * no per-message TTL, no batch publish). Returns its name and subjects; throws when NATS refuses.
 */
export async function ensureStatusStream(
  jsm: JetStreamManager,
  controller: string,
  root: string,
  options: StatusStreamOptions = {},
): Promise<{ stream: string; subjects: StatusStreamSubjects }> {
  const stream = statusStreamName(controller);
  const subjects = statusStreamSubjects(root, controller);
  const limits = statusStreamLimits(options);
  const reservation = { stream, variable: 'MESH_STATUS_MAX_BYTES', maxBytes: limits.max_bytes as number, replicas: limits.num_replicas ?? 1 };
  const info = await jsm.streams.info(stream).catch((error: Error) => {
    if (/stream not found/i.test(error.message)) return undefined;
    throw error;
  });
  if (!info) {
    await jsm.streams
      .add({ name: stream, subjects: [subjects.all], storage: StorageType.File, retention: RetentionPolicy.Limits, ...limits })
      .catch(async (error: unknown) => {
        throw replicasRefusal(await storageRefusal(jsm, error, reservation), stream, limits.num_replicas ?? 1);
      });
    options.logger?.info({ stream, subjects: subjects.all }, 'status stream created');
  } else {
    const diff: Partial<StreamConfig> = {};
    for (const [key, want] of Object.entries(limits) as [keyof Limits, never][]) if (info.config[key] !== want) diff[key] = want;
    if (info.config.subjects?.join() !== subjects.all) diff.subjects = [subjects.all];
    if (Object.keys(diff).length) {
      await updateStream(jsm, stream, diff, limits.num_replicas ?? 1).catch(async (error: unknown) => {
        throw await storageRefusal(jsm, error, reservation);
      });
      options.logger?.info({ stream, changed: Object.keys(diff) }, 'status stream limits updated');
    }
  }
  return { stream, subjects };
}

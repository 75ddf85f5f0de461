import { DiscardPolicy, type JetStreamManager, RetentionPolicy, StorageType, type StreamConfig } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { replicasRefusal, updateStream } from './buckets.js';
import { storageRefusal } from './storage.js';

/**
 * The news stream keeps at most this many bytes of news not yet pruned (1 GiB): hours of a
 * 10,000-machine mesh's heartbeats, so a store outage of that long loses nothing; past it the
 * oldest go first (discard old), which for heartbeats is the least of losses.
 */
export const NEWS_STREAM_MAX_BYTES = 1024 * 1024 * 1024;
/** ...and none older than a day: news older than that describes a mesh that no longer is. */
export const NEWS_STREAM_MAX_AGE_MS = 24 * 3600 * 1000;
/**
 * The durable consumer gateways before issue 37's partitions pulled from. No longer made: a
 * partition never written starts where it had acknowledged, when it is there (an upgrade).
 */
export const NEWS_LEGACY_CONSUMER = 'ingest';

const NANOS_PER_MS = 1_000_000;

/** The stream that captures `<subjects>.news.>` for a controller. */
export const newsStreamName = (controller: string): string => `${controller}_news`;

type Limits = Pick<StreamConfig, 'max_bytes' | 'max_age' | 'discard' | 'num_replicas'>;

/** What the stream's limits must be, with `replicas` copies (MESH_KV_REPLICAS) of `maxBytes` (MESH_NEWS_MAX_BYTES); read and updated at start where they differ (as the buckets' are). */
export const newsStreamLimits = (replicas = 1, maxBytes = NEWS_STREAM_MAX_BYTES): Limits => ({
  max_bytes: maxBytes,
  max_age: NEWS_STREAM_MAX_AGE_MS * NANOS_PER_MS,
  discard: DiscardPolicy.Old,
  num_replicas: replicas,
});

/**
 * Ensures the controller's news stream exists (file storage, limits retention, `newsStreamLimits`),
 * updating limits that differ; returns its name. Throws when NATS refuses.
 */
export async function ensureNewsStream(
  jsm: JetStreamManager,
  controller: string,
  root: string,
  logger?: Logger,
  replicas = 1,
  maxBytes = NEWS_STREAM_MAX_BYTES,
): Promise<{ stream: string }> {
  const stream = newsStreamName(controller);
  const limits = newsStreamLimits(replicas, maxBytes);
  const reservation = { stream, variable: 'MESH_NEWS_MAX_BYTES', maxBytes, replicas };
  const subjects = [`${root}.news.>`];
  const info = await jsm.streams.info(stream).catch((error: Error) => {
    if (/stream not found/i.test(error.message)) return undefined;
    throw error;
  });
  if (!info) {
    await jsm.streams.add({ name: stream, subjects, storage: StorageType.File, retention: RetentionPolicy.Limits, ...limits }).catch(async (error: Error) => {
      // Another controller's news stream already captures these subjects: say so in the mesh's words.
      if (!/subjects overlap/i.test(error.message)) throw replicasRefusal(await storageRefusal(jsm, error, reservation), stream, replicas);
      throw new Error(
        `another stream already captures ${subjects.join(', ')}: is another controller running on MESH_SUBJECTS=${root}? Each controller needs its own MESH_SUBJECTS on a shared NATS (${error.message})`,
      );
    });
    logger?.info({ stream, subjects }, 'news stream created');
  } else {
    const diff: Partial<StreamConfig> = {};
    for (const [key, want] of Object.entries(limits) as [keyof Limits, never][]) if (info.config[key] !== want) diff[key] = want;
    if (info.config.subjects?.join() !== subjects.join()) diff.subjects = subjects;
    if (Object.keys(diff).length) {
      await updateStream(jsm, stream, diff, replicas).catch(async (error: unknown) => {
        throw await storageRefusal(jsm, error, reservation);
      });
      logger?.info({ stream, changed: Object.keys(diff) }, 'news stream limits updated');
    }
  }
  return { stream };
}

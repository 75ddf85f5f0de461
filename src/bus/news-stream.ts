import {
  AckPolicy,
  type Consumer,
  type ConsumerConfig,
  DeliverPolicy,
  DiscardPolicy,
  type JetStreamClient,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { replicasRefusal, updateStream } from './buckets.js';

/**
 * The news stream keeps at most this many bytes of news not yet pruned (1 GiB): hours of a
 * 10,000-machine mesh's heartbeats, so a store outage of that long loses nothing; past it the
 * oldest go first (discard old), which for heartbeats is the least of losses.
 */
export const NEWS_STREAM_MAX_BYTES = 1024 * 1024 * 1024;
/** ...and none older than a day: news older than that describes a mesh that no longer is. */
export const NEWS_STREAM_MAX_AGE_MS = 24 * 3600 * 1000;
/**
 * A message delivered to a replica and not acknowledged within this long is delivered again (to
 * any replica): short, so that the news a replica held when it died or froze is written by another
 * within seconds (until then it holds the watermark back: docs/status.md). A replica still writing
 * a message tells the stream so (`working`) every NEWS_WORKING_EVERY_MS, however long its write takes.
 */
export const NEWS_ACK_WAIT_MS = 3_000;
/** A replica holding a message unwritten tells the stream it is working on it this often (a third of NEWS_ACK_WAIT_MS). */
export const NEWS_WORKING_EVERY_MS = 1_000;
/**
 * At most this many messages are delivered and not yet acknowledged, over all replicas: the
 * memory news in flight may take (as NEWS_PENDING_MAX was), the server holds the rest.
 */
export const NEWS_ACK_PENDING_MAX = 200_000;
/** The one durable consumer every replica pulls from, so each message is written by one replica. */
export const NEWS_CONSUMER = 'ingest';

const NANOS_PER_MS = 1_000_000;

/** The stream that captures `<subjects>.news.>` for a controller. */
export const newsStreamName = (controller: string): string => `${controller}_news`;

type Limits = Pick<StreamConfig, 'max_bytes' | 'max_age' | 'discard' | 'num_replicas'>;

/** What the stream's limits must be, with `replicas` copies (MESH_KV_REPLICAS); read and updated at start where they differ (as the buckets' are). */
export const newsStreamLimits = (replicas = 1): Limits => ({
  max_bytes: NEWS_STREAM_MAX_BYTES,
  max_age: NEWS_STREAM_MAX_AGE_MS * NANOS_PER_MS,
  discard: DiscardPolicy.Old,
  num_replicas: replicas,
});

type ConsumerLimits = Pick<ConsumerConfig, 'ack_wait' | 'max_ack_pending'>;

const consumerLimits = (): ConsumerLimits => ({ ack_wait: NEWS_ACK_WAIT_MS * NANOS_PER_MS, max_ack_pending: NEWS_ACK_PENDING_MAX });

/**
 * Ensures the controller's news stream (file storage, limits retention, `newsStreamLimits`) and its
 * durable pull consumer NEWS_CONSUMER (explicit acks) exist, updating limits that differ; returns
 * the consumer. Throws when NATS refuses.
 */
export async function ensureNewsStream(
  js: JetStreamClient,
  jsm: JetStreamManager,
  controller: string,
  root: string,
  logger?: Logger,
  replicas = 1,
): Promise<{ stream: string; consumer: Consumer }> {
  const stream = newsStreamName(controller);
  const limits = newsStreamLimits(replicas);
  const subjects = [`${root}.news.>`];
  const info = await jsm.streams.info(stream).catch((error: Error) => {
    if (/stream not found/i.test(error.message)) return undefined;
    throw error;
  });
  if (!info) {
    await jsm.streams.add({ name: stream, subjects, storage: StorageType.File, retention: RetentionPolicy.Limits, ...limits }).catch((error: Error) => {
      // Another controller's news stream already captures these subjects: say so in the mesh's words.
      if (!/subjects overlap/i.test(error.message)) throw replicasRefusal(error, stream, replicas);
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
      await updateStream(jsm, stream, diff, replicas);
      logger?.info({ stream, changed: Object.keys(diff) }, 'news stream limits updated');
    }
  }
  const want = consumerLimits();
  const existing = await jsm.consumers.info(stream, NEWS_CONSUMER).catch((error: Error) => {
    if (/consumer not found/i.test(error.message)) return undefined;
    throw error;
  });
  if (!existing) {
    await jsm.consumers.add(stream, { durable_name: NEWS_CONSUMER, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, ...want });
  } else {
    const diff: Partial<ConsumerLimits> = {};
    for (const [key, value] of Object.entries(want) as [keyof ConsumerLimits, never][]) if (existing.config[key] !== value) diff[key] = value;
    if (Object.keys(diff).length) await jsm.consumers.update(stream, NEWS_CONSUMER, diff);
  }
  return { stream, consumer: await js.consumers.get(stream, NEWS_CONSUMER) };
}

import { DiscardPolicy, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import { type KV, Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';

/** The calls bucket keeps this many calls: enough for an operator's week, small enough to list from memory. */
export const CALLS_KEPT = 1000;
/** ...and none older than this: a call's outcome matters while someone may still ask about it. */
export const CALLS_KEPT_FOR_MS = 14 * 24 * 3600 * 1000;

/**
 * The hand-act log is an audit log, kept long: years of repairs by hand at any real rate, yet a
 * bound, because every replica keeps the log in memory to list it.
 */
export const HAND_ACTS_KEPT = 100_000;

const NANOS_PER_MS = 1_000_000;

/** The names of a controller's three buckets; each is backed by the stream `KV_<name>`. */
export interface BucketNames {
  calls: string;
  handActs: string;
  leases: string;
}

export const bucketNames = (controller: string): BucketNames => ({
  calls: `${controller}_calls`,
  handActs: `${controller}_hand-acts`,
  leases: `${controller}_leases`,
});

export const streamOf = (bucket: string): string => `KV_${bucket}`;

/** The controller's buckets, open. */
export interface Buckets {
  names: BucketNames;
  calls: KV;
  handActs: KV;
  leases: KV;
}

type Limits = Partial<Pick<StreamConfig, 'max_age' | 'max_msgs_per_subject' | 'max_msgs' | 'discard'>>;

/**
 * What each bucket's stream must say. Calls: one entry per call, the last CALLS_KEPT or
 * CALLS_KEPT_FOR_MS whichever is less, the oldest pushed out (discard old) — the server keeps the
 * bound, no sweep. Hand-acts: an audit log, the last HAND_ACTS_KEPT, with no age limit. Leases: the latest entry per key.
 */
export function bucketLimits(names: BucketNames): Record<string, Limits> {
  return {
    [names.calls]: { max_age: CALLS_KEPT_FOR_MS * NANOS_PER_MS, max_msgs_per_subject: 1, max_msgs: CALLS_KEPT, discard: DiscardPolicy.Old },
    [names.handActs]: { max_age: 0, max_msgs_per_subject: 1, max_msgs: HAND_ACTS_KEPT, discard: DiscardPolicy.Old },
    [names.leases]: { max_age: 0, max_msgs_per_subject: 1, max_msgs: -1 },
  };
}

/**
 * Opens a bucket, creating it when absent. `Kvm.create` binds to a present bucket without applying
 * options (and creates one with discard new), so the stream's config is read and updated where it
 * differs from `limits`. Returns what was changed, for the log.
 */
async function ensureBucket(kvm: Kvm, jsm: JetStreamManager, name: string, limits: Limits): Promise<{ kv: KV; changed: string[] }> {
  const kv = await kvm.create(name, { history: 1 });
  const stream = streamOf(name);
  const { config } = await jsm.streams.info(stream);
  const diff: Partial<Limits> = {};
  for (const [key, want] of Object.entries(limits) as [keyof Limits, never][]) {
    if (config[key] !== want) diff[key] = want;
  }
  const changed = Object.keys(diff);
  if (changed.length) await jsm.streams.update(stream, diff);
  return { kv, changed };
}

/** Ensures the controller's three buckets exist with the limits DESIGN.md sets; throws when NATS refuses. */
export async function ensureBuckets(nc: NatsConnection, jsm: JetStreamManager, controller: string, logger?: Logger): Promise<Buckets> {
  const names = bucketNames(controller);
  const kvm = new Kvm(nc);
  const limits = bucketLimits(names);
  const opened: Record<string, KV> = {};
  for (const name of [names.calls, names.handActs, names.leases]) {
    const { kv, changed } = await ensureBucket(kvm, jsm, name, limits[name]!);
    if (changed.length) logger?.info({ bucket: name, changed }, 'bucket limits updated');
    opened[name] = kv;
  }
  return { names, calls: opened[names.calls]!, handActs: opened[names.handActs]!, leases: opened[names.leases]! };
}

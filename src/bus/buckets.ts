import { DiscardPolicy, JetStreamApiCodes, JetStreamApiError, type JetStreamManager, type StreamConfig, type StreamInfo } from '@nats-io/jetstream';
import { type KV, Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { KV_WRITE_RETRY_MS } from './retry.js';

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
  /** How long a write to them is retried while their stream has no leader (MESH_KV_WRITE_RETRY_S; KV_WRITE_RETRY_MS when absent). */
  writeRetryMs?: number;
}

type Limits = Partial<Pick<StreamConfig, 'max_age' | 'max_msgs_per_subject' | 'max_msgs' | 'discard' | 'num_replicas'>>;

/** NATS refused the replicas MESH_KV_REPLICAS asks for: the cluster has fewer JetStream servers (or none clustered). */
export class ReplicasRefused extends Error {
  override name = 'ReplicasRefused';
}

/**
 * What NATS 2.9 answers when a stream asks for more replicas than it can place: `no suitable peers
 * for placement` (a cluster of fewer nodes, or too few of them up), `insufficient resources`, and
 * `replicas > 1 not supported in non-clustered mode` (a single server).
 */
const TOO_FEW_SERVERS = /no suitable peers|insufficient resources|not supported in non-clustered mode/i;

/**
 * Turns NATS's refusal of `replicas` for `stream` into a ReplicasRefused naming MESH_KV_REPLICAS;
 * any other error is returned as it is. For every stream the gateway creates (buckets, news, status).
 */
export function replicasRefusal(error: unknown, stream: string, replicas: number): unknown {
  const message = error instanceof Error ? error.message : String(error);
  if (!TOO_FEW_SERVERS.test(message)) return error;
  return new ReplicasRefused(
    `MESH_KV_REPLICAS=${replicas} asks for ${replicas} copies of the stream ${stream}, but the NATS cluster cannot place them (NATS said: ${message}): ` +
      `set MESH_KV_REPLICAS to at most the number of JetStream servers in the cluster (1 for a single nats-server), or start the missing servers`,
  );
}

/**
 * Updates a stream's config where it differs and checks the server took it: a single 2.9 server
 * accepts an update to num_replicas > 1 without applying it, so the stream is read back.
 */
export async function updateStream(jsm: JetStreamManager, stream: string, diff: Partial<StreamConfig>, replicas: number): Promise<void> {
  const info = await jsm.streams.update(stream, diff).catch((error: unknown) => {
    throw replicasRefusal(error, stream, replicas);
  });
  if (diff.num_replicas !== undefined && info.config.num_replicas !== diff.num_replicas) {
    throw replicasRefusal(new Error(`replicas > 1 not supported in non-clustered mode (the stream kept ${info.config.num_replicas})`), stream, replicas);
  }
  if (diff.num_replicas !== undefined) await untilLed(jsm, stream, diff.num_replicas);
}

/**
 * Waits (up to KV_WRITE_RETRY_MS) until a stream whose replicas changed has a leader and all its
 * peers current: NATS 2.9 answers writes `no responders` for a moment after the change, and the
 * gateway writes its lease at once. Past the wait it goes on; its writes retry or fail on their own.
 */
async function untilLed(jsm: JetStreamManager, stream: string, replicas: number): Promise<void> {
  const deadline = Date.now() + KV_WRITE_RETRY_MS;
  while (Date.now() < deadline) {
    const info = await jsm.streams.info(stream).catch(() => undefined);
    const peers = info?.cluster?.replicas ?? [];
    if (info && !info.cluster) return; // a single server: nothing to elect
    if (info?.cluster?.leader && peers.length === replicas - 1 && peers.every((p) => p.current)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * What each bucket's stream must say. Calls: one entry per call, the last CALLS_KEPT or
 * CALLS_KEPT_FOR_MS whichever is less, the oldest pushed out (discard old) — the server keeps the
 * bound, no sweep. Hand-acts: an audit log, the last HAND_ACTS_KEPT, with no age limit. Leases: the latest entry per key.
 */
export function bucketLimits(names: BucketNames, replicas = 1): Record<string, Limits> {
  return {
    [names.calls]: {
      max_age: CALLS_KEPT_FOR_MS * NANOS_PER_MS,
      max_msgs_per_subject: 1,
      max_msgs: CALLS_KEPT,
      discard: DiscardPolicy.Old,
      num_replicas: replicas,
    },
    [names.handActs]: { max_age: 0, max_msgs_per_subject: 1, max_msgs: HAND_ACTS_KEPT, discard: DiscardPolicy.Old, num_replicas: replicas },
    [names.leases]: { max_age: 0, max_msgs_per_subject: 1, max_msgs: -1, num_replicas: replicas },
  };
}

/** How long a stream just made may answer "not found" (a cluster assigning it to its nodes) before that is believed. */
const JUST_MADE_STREAM_MS = 3_000;

/** The stream's info, asked again while a cluster has not yet placed the stream it just acknowledged making. */
async function infoOfJustMade(jsm: JetStreamManager, stream: string): Promise<StreamInfo> {
  const until = Date.now() + JUST_MADE_STREAM_MS;
  for (;;) {
    try {
      return await jsm.streams.info(stream);
    } catch (error) {
      const notFound = error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound;
      if (!notFound || Date.now() > until) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/**
 * Opens a bucket, creating it when absent. `Kvm.create` binds to a present bucket without applying
 * options (and creates one with discard new), so the stream's config is read and updated where it
 * differs from `limits`. Returns what was changed, for the log.
 */
async function ensureBucket(kvm: Kvm, jsm: JetStreamManager, name: string, limits: Limits): Promise<{ kv: KV; changed: string[] }> {
  const stream = streamOf(name);
  const replicas = limits.num_replicas ?? 1;
  const kv = await kvm.create(name, { history: 1, replicas }).catch((error: unknown) => {
    throw replicasRefusal(error, stream, replicas);
  });
  const { config } = await infoOfJustMade(jsm, stream);
  const diff: Partial<Limits> = {};
  for (const [key, want] of Object.entries(limits) as [keyof Limits, never][]) {
    if (config[key] !== want) diff[key] = want;
  }
  const changed = Object.keys(diff);
  if (changed.length) await updateStream(jsm, stream, diff, replicas);
  return { kv, changed };
}

/**
 * Ensures the controller's three buckets exist with the limits DESIGN.md sets and `replicas` copies
 * each (MESH_KV_REPLICAS); throws when NATS refuses, a ReplicasRefused when it cannot place the copies.
 */
export async function ensureBuckets(
  nc: NatsConnection,
  jsm: JetStreamManager,
  controller: string,
  logger?: Logger,
  replicas = 1,
  writeRetryMs = KV_WRITE_RETRY_MS,
): Promise<Buckets> {
  const names = bucketNames(controller);
  const kvm = new Kvm(nc);
  const limits = bucketLimits(names, replicas);
  const opened: Record<string, KV> = {};
  for (const name of [names.calls, names.handActs, names.leases]) {
    const { kv, changed } = await ensureBucket(kvm, jsm, name, limits[name]!);
    if (changed.length) logger?.info({ bucket: name, changed }, 'bucket limits updated');
    opened[name] = kv;
  }
  return { names, calls: opened[names.calls]!, handActs: opened[names.handActs]!, leases: opened[names.leases]!, writeRetryMs };
}

import { type JetStreamManager, StorageType } from '@nats-io/jetstream';

/** NATS's refusal when a stream's `max_bytes` (times its replicas) does not fit the server's JetStream store. */
const INSUFFICIENT_STORAGE = /insufficient storage/i;
/** The free store is measured to this grain: a figure for a person, not an allocation. */
const PROBE_GRAIN_BYTES = 1 << 20;

/** The start refused because a stream's reservation does not fit NATS's JetStream file store. */
class StorageRefused extends Error {
  override name = 'StorageRefused';
}

/** What a stream reserves, and the variable an operator sets it with. */
export interface Reservation {
  stream: string;
  /** MESH_NEWS_MAX_BYTES or MESH_STATUS_MAX_BYTES. */
  variable: string;
  maxBytes: number;
  replicas: number;
}

const mib = (bytes: number) => `${Math.floor(bytes / PROBE_GRAIN_BYTES)} MiB`;

/**
 * The largest `max_bytes` a new file stream may reserve on this server now, found by creating and
 * deleting a probe stream (NATS 2.9 tells an account nothing of the server's store); undefined
 * when NATS refuses the probe for another reason (say, a user not allowed to create it).
 */
async function freeFileStore(jsm: JetStreamManager, probe: string, upTo: number): Promise<number | undefined> {
  const fits = async (bytes: number): Promise<boolean | undefined> => {
    try {
      await jsm.streams.add({ name: probe, subjects: [`_mesh_storage_probe.${probe}`], storage: StorageType.File, max_bytes: bytes });
    } catch (error) {
      return INSUFFICIENT_STORAGE.test(error instanceof Error ? error.message : String(error)) ? false : undefined;
    }
    await jsm.streams.delete(probe).catch(() => undefined);
    return true;
  };
  let low = 0;
  let high = Math.ceil(upTo / PROBE_GRAIN_BYTES);
  const first = await fits(PROBE_GRAIN_BYTES);
  if (first === undefined) return undefined;
  if (!first) return 0;
  low = 1;
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    const fit = await fits(mid * PROBE_GRAIN_BYTES);
    if (fit === undefined) return undefined;
    if (fit) low = mid;
    else high = mid;
  }
  return low * PROBE_GRAIN_BYTES;
}

/**
 * Turns NATS's "insufficient storage" for a stream into a StorageRefused naming the variables that
 * size the gateway's streams and the server's free JetStream store; any other error is returned
 * as it is.
 */
export async function storageRefusal(jsm: JetStreamManager, error: unknown, wanted: Reservation): Promise<unknown> {
  const message = error instanceof Error ? error.message : String(error);
  if (!INSUFFICIENT_STORAGE.test(message)) return error;
  const free = await freeFileStore(jsm, `${wanted.stream}_storage_probe`, wanted.maxBytes * wanted.replicas).catch(() => undefined);
  return new StorageRefused(
    `NATS has too little JetStream file store for the stream ${wanted.stream}: it reserves ${wanted.variable}=${wanted.maxBytes} (${mib(wanted.maxBytes)}) ` +
      `× MESH_KV_REPLICAS=${wanted.replicas}, and the server has ${free === undefined ? 'an unknown amount' : `about ${mib(free)}`} free (NATS said: ${message}). ` +
      `Each controller reserves MESH_NEWS_MAX_BYTES + MESH_STATUS_MAX_BYTES (1 GiB each by default) times MESH_KV_REPLICAS: ` +
      `lower them, raise the server's jetstream max_file_store, or delete streams no longer used (docs/deploy.md, "JetStream storage")`,
  );
}

import { promisify } from 'node:util';
import { gunzip, gzip, constants as zlib } from 'node:zlib';
import { headers, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { Unavailable } from '../../kernel/errors.js';
import type { Composition, StatusFeed } from './composition.js';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** Room left in a NATS message for headers and protocol framing. */
const PAYLOAD_HEADROOM = 8 * 1024;
export const SEQ_HEADER = 'Mesh-Status-Seq';
export const PART_HEADER = 'Mesh-Status-Part';

/** One NATS message of a composition: its body and the headers a large one is framed with. */
export interface StatusPart {
  data: Uint8Array;
  headers?: MsgHdrs;
}

/**
 * A composition as it travels on `<subjects>.status`: plain JSON in one message when it fits the
 * server's max_payload (the wire contract); larger, gzipped and cut into parts numbered `i/n`
 * under headers, because NATS refuses a message over max_payload (1 MiB by default).
 */
export async function encodeComposition(composition: Composition, maxPayload: number): Promise<StatusPart[]> {
  const json = Buffer.from(JSON.stringify(composition));
  const room = Math.max(maxPayload - PAYLOAD_HEADROOM, 1024);
  if (json.length <= room) return [{ data: json }];
  const packed = await gzipAsync(json, { level: zlib.Z_BEST_SPEED });
  const count = Math.ceil(packed.length / room);
  const parts: StatusPart[] = [];
  for (let i = 0; i < count; i++) {
    const h = headers();
    h.set(SEQ_HEADER, String(composition.seq));
    h.set(PART_HEADER, `${i + 1}/${count}`);
    h.set('Content-Encoding', 'gzip');
    parts.push({ data: packed.subarray(i * room, (i + 1) * room), headers: h });
  }
  return parts;
}

/** Publishes a composition on `subject` as `encodeComposition` frames it. */
export async function publishComposition(nc: NatsConnection, subject: string, composition: Composition): Promise<void> {
  const parts = await encodeComposition(composition, nc.info?.max_payload ?? 1024 * 1024);
  for (const part of parts) nc.publish(subject, part.data, part.headers ? { headers: part.headers } : undefined);
}

/**
 * Reassembles compositions from `<subjects>.status` messages. Keeps the parts of one composition
 * at a time: a part of a newer one drops an unfinished older one.
 */
export function compositionAssembler(): (msg: Pick<Msg, 'data' | 'headers'>) => Promise<Composition | undefined> {
  let assembling: { seq: number; parts: Uint8Array[]; have: number } | undefined;
  return async (msg) => {
    const part = msg.headers?.get(PART_HEADER);
    if (!part) return parseComposition(msg.data);
    const seq = Number(msg.headers!.get(SEQ_HEADER));
    const [index, count] = part.split('/').map(Number);
    if (!Number.isInteger(seq) || !(index >= 1 && index <= count) || count > 10_000) throw new Error(`bad status part header ${part}`);
    if (!assembling || assembling.seq !== seq) {
      if (assembling && assembling.seq > seq) return undefined;
      assembling = { seq, parts: new Array(count), have: 0 };
    }
    if (!assembling.parts[index - 1]) assembling.have++;
    assembling.parts[index - 1] = msg.data.slice();
    if (assembling.have < count) return undefined;
    const packed = Buffer.concat(assembling.parts);
    assembling = undefined;
    return parseComposition(await gunzipAsync(packed));
  };
}

function parseComposition(data: Uint8Array): Composition {
  const value = JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8')) as Composition;
  if (typeof value?.seq !== 'number' || !Array.isArray(value.machines)) throw new Error('not a composition');
  return Object.freeze(value);
}

export interface RunningStatusFeed extends StatusFeed {
  /** How many compositions of another controller were heard on this subject and ignored. */
  foreignIgnored(): number;
  stop(): Promise<void>;
}

/** A replica warns about the first foreign composition and then every this many, so a shared subject is seen, not flooded. */
const FOREIGN_WARN_EVERY = 100;

/**
 * Every replica's view of the status: subscribes to `<subjects>.status` (every replica hears every
 * composition), keeps the newest by seq and hands each newer one to the listeners. A message that
 * is not a composition is logged and skipped; an older seq than the one kept is ignored.
 */
export function startStatusFeed(nc: NatsConnection, subject: string, logger: Logger, controller?: string): RunningStatusFeed {
  let last: Composition | undefined;
  let foreign = 0;
  const listeners = new Set<(c: Composition) => void>();
  const assemble = compositionAssembler();
  let chain = Promise.resolve();
  const accept = (composition: Composition | undefined) => {
    if (!composition) return;
    if (controller && typeof composition.controller === 'string' && composition.controller !== controller) {
      // Two controllers on one MESH_SUBJECTS would interleave their meshes: keep ours, say so.
      if (foreign++ % FOREIGN_WARN_EVERY === 0) {
        logger.warn(
          { subject, theirs: composition.controller, ours: controller, ignored: foreign },
          'a composition of another controller on our status subject: ignored (is MESH_SUBJECTS shared?)',
        );
      }
      return;
    }
    if (last && composition.seq <= last.seq) return;
    last = composition;
    for (const listener of listeners) {
      try {
        listener(composition);
      } catch (err) {
        logger.error({ err }, 'a status listener failed');
      }
    }
  };
  const sub: Subscription = nc.subscribe(subject, {
    callback: (err, msg) => {
      if (err) return logger.error({ err }, 'status subscription failed');
      // In order: a large composition's parts are gunzipped off the event loop, and arrive in order.
      chain = chain.then(() => assemble(msg).then(accept)).catch((error) => logger.warn({ err: error, subject }, 'not a composition: ignored'));
    },
  });
  return {
    current: () => last,
    foreignIgnored: () => foreign,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async stop() {
      sub.unsubscribe();
      listeners.clear();
      await chain;
    },
  };
}

/**
 * The compositions a subscriber gets: the current one first (when there is one), then each newer
 * one. A slow reader skips to the latest: at most one composition waits per subscriber, so a
 * subscriber never holds more than that in memory however far behind it falls. `return()` ends it
 * at once, even while it waits.
 */
export function followLatest(feed: StatusFeed): AsyncIterableIterator<Composition> {
  let waiting: Composition | undefined = feed.current();
  let wake: ((result: IteratorResult<Composition>) => void) | undefined;
  let done = false;
  const unsubscribe = feed.subscribe((composition) => {
    if (done) return;
    if (wake) {
      const resolve = wake;
      wake = undefined;
      resolve({ value: composition, done: false });
    } else waiting = composition;
  });
  const finish = (): IteratorResult<Composition> => {
    done = true;
    waiting = undefined;
    unsubscribe();
    const resolve = wake;
    wake = undefined;
    resolve?.({ value: undefined, done: true });
    return { value: undefined, done: true };
  };
  return {
    next() {
      if (done) return Promise.resolve({ value: undefined, done: true });
      if (waiting) {
        const value = waiting;
        waiting = undefined;
        return Promise.resolve({ value, done: false });
      }
      return new Promise((resolve) => (wake = resolve));
    },
    return: () => Promise.resolve(finish()),
    throw: (error?: unknown) => {
      finish();
      return Promise.reject(error);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/** The current composition, or the first one heard within `timeoutMs`; undefined if none comes. */
export function firstComposition(feed: StatusFeed, timeoutMs: number): Promise<Composition | undefined> {
  const now = feed.current();
  if (now) return Promise.resolve(now);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      unsubscribe();
      resolve(undefined);
    }, timeoutMs);
    const unsubscribe = feed.subscribe((composition) => {
      clearTimeout(timer);
      unsubscribe();
      resolve(composition);
    });
  });
}

/** A replica just started may not have heard a composition yet: wait this long for the first, never compose. */
export const STATUS_FIRST_WAIT_MS = 3_000;

/**
 * The `status` reading, whichever door asks: the last composition this replica heard, at once, or
 * the first one within STATUS_FIRST_WAIT_MS of a start; Unavailable when none comes. A status is
 * never composed while its caller waits.
 */
export async function currentStatus(feed: StatusFeed): Promise<Composition> {
  const composition = await firstComposition(feed, STATUS_FIRST_WAIT_MS);
  if (!composition) throw new Unavailable('no status composed yet: the serving replica composes one within seconds of starting');
  return composition;
}

import { createGzip, constants as zlib } from 'node:zlib';
import { stringifyChunked } from '@discoveryjs/json-ext';
import { headers, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import type { Composition } from '../composition.js';
import type { StatusDelta } from '../delta/delta.js';
import {
  BASE_HEADER,
  COUNTS_HEADER,
  KIND_HEADER,
  PART_HEADER,
  SEQ_HEADER,
  SNAPSHOT_HEADER,
  STATUS_PARTS_MAX,
  type StatusSealing,
  type StreamKind,
} from './wire.js';

/** Room left in a NATS message for headers and protocol framing. */
const PAYLOAD_HEADROOM = 8 * 1024;
/**
 * A status message's JSON is written this many characters at a time, the event loop free between
 * pieces: a million machines' composition is 155 MB of JSON, which JSON.stringify wrote in one go
 * of 0.7–1.1 s and Buffer.from copied in 0.2–0.8 s more, every request and beat waiting
 * (docs/BENCHMARKS.md, "A snapshot at a million machines without stopping the gateway").
 */
const STATUS_JSON_PIECE_CHARS = 64 * 1024;

/** The JSON of `value` as Buffers of about STATUS_JSON_PIECE_CHARS, a turn of the event loop between them. */
async function jsonPieces(value: Composition | StatusDelta): Promise<{ pieces: Buffer[]; bytes: number }> {
  const pieces: Buffer[] = [];
  let bytes = 0;
  for (const chunk of stringifyChunked(value, { highWaterMark: STATUS_JSON_PIECE_CHARS })) {
    if (pieces.length > 0) await new Promise((resolve) => setImmediate(resolve));
    const piece = Buffer.from(chunk);
    pieces.push(piece);
    bytes += piece.length;
  }
  return { pieces, bytes };
}

/** The pieces gzipped (zlib's thread pool, off the event loop), as one Buffer. */
function gzipPieces(pieces: readonly Buffer[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const gzip = createGzip({ level: zlib.Z_BEST_SPEED });
    const out: Buffer[] = [];
    gzip.on('data', (chunk: Buffer) => out.push(chunk));
    gzip.on('error', reject);
    gzip.on('end', () => resolve(Buffer.concat(out)));
    for (const piece of pieces) gzip.write(piece);
    gzip.end();
  });
}

type EncodedJson = { json: Buffer } | { packed: Buffer };

/**
 * A large composition's gzipped JSON, by the composition (and the room it was measured against): a
 * snapshot goes into the status stream and then whole on `<subjects>.status`, and is written and
 * gzipped once for both. Weak: it goes with the composition.
 */
const packedJson = new WeakMap<object, { room: number; encoding: Promise<EncodedJson> }>();

/** The JSON of `value`, whole when it fits `room` bytes, else gzipped (`packedJson` keeps a large one's). */
function encodeJson(value: Composition | StatusDelta, room: number): Promise<EncodedJson> {
  const kept = packedJson.get(value);
  if (kept?.room === room) return kept.encoding;
  const encoding = jsonPieces(value).then(async ({ pieces, bytes }): Promise<EncodedJson> => {
    if (bytes <= room) return { json: pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces, bytes) };
    return { packed: await gzipPieces(pieces) };
  });
  // Only a large composition is kept: a delta goes out once, a small one is cheap to write again.
  if (!Array.isArray((value as Composition).machines)) return encoding;
  packedJson.set(value, { room, encoding });
  encoding.then(
    (encoded) => 'json' in encoded && packedJson.delete(value),
    () => packedJson.delete(value),
  );
  return encoding;
}

/** One NATS message of a status message: its body and the headers it is framed with. */
export interface StatusPart {
  data: Uint8Array;
  headers?: MsgHdrs;
}

/** What frames a message of the status stream beyond its seq and kind. */
export interface StreamFraming {
  base?: number;
  snapshotAt?: number;
  counts?: { up: number; late: number; silent: number };
}

/**
 * Every status message, one way: JSON in one NATS message when it fits the server's max_payload
 * (less PAYLOAD_HEADROOM); larger, gzipped and cut into parts numbered `i/n` (NATS refuses a
 * message over max_payload, 1 MiB by default; NATS 2.9 has no batch publish, so parts are
 * consecutive messages of one publisher). A message of the status stream (`kind`) carries its seq,
 * kind and framing on every part; a whole composition on `<subjects>.status` (no `kind`) goes in
 * one message as plain JSON without headers (the wire contract agents read), its parts with seq,
 * part and encoding only.
 */
async function encodeStatusMessage(
  kind: StreamKind | undefined,
  value: Composition | StatusDelta,
  maxPayload: number,
  framing: StreamFraming = {},
  sealing?: StatusSealing,
): Promise<StatusPart[]> {
  const room = Math.max(maxPayload - PAYLOAD_HEADROOM, 1024);
  const encoded = await encodeJson(value, room);
  const frame = (part?: string) => {
    const h = headers();
    h.set(SEQ_HEADER, String(value.seq));
    if (kind) h.set(KIND_HEADER, kind);
    if (framing.base !== undefined) h.set(BASE_HEADER, String(framing.base));
    if (framing.snapshotAt !== undefined) h.set(SNAPSHOT_HEADER, String(framing.snapshotAt));
    if (framing.counts) h.set(COUNTS_HEADER, `${framing.counts.up} ${framing.counts.late} ${framing.counts.silent}`);
    if (part) {
      h.set(PART_HEADER, part);
      h.set('Content-Encoding', 'gzip');
    }
    return h;
  };
  const sealed = (part: StatusPart): StatusPart => {
    if (!sealing) return part;
    const h = part.headers ?? frame();
    sealing.seal(h, part.data);
    return { data: part.data, headers: h };
  };
  if ('json' in encoded) return [sealed({ data: encoded.json, ...(kind && { headers: frame() }) })];
  const { packed } = encoded;
  const count = Math.ceil(packed.length / room);
  if (count > STATUS_PARTS_MAX) throw new Error(`status message ${value.seq} needs ${count} parts, over ${STATUS_PARTS_MAX}`);
  const parts: StatusPart[] = [];
  for (let i = 0; i < count; i++) parts.push(sealed({ data: packed.subarray(i * room, (i + 1) * room), headers: frame(`${i + 1}/${count}`) }));
  return parts;
}

/** A snapshot or a delta as it goes into the status stream (`encodeStatusMessage`), sealed with `sealing` when given. */
export const encodeStreamEntry = (
  kind: StreamKind,
  value: Composition | StatusDelta,
  maxPayload: number,
  framing: StreamFraming = {},
  sealing?: StatusSealing,
): Promise<StatusPart[]> => encodeStatusMessage(kind, value, maxPayload, framing, sealing);

/**
 * A composition as it travels on `<subjects>.status` (`encodeStatusMessage`): plain JSON in one
 * message when it fits (its headers then only the seal's, with `sealing`).
 */
export const encodeComposition = (composition: Composition, maxPayload: number, sealing?: StatusSealing): Promise<StatusPart[]> =>
  encodeStatusMessage(undefined, composition, maxPayload, {}, sealing);

/** Publishes a composition on `subject` as `encodeComposition` frames it (sealed with `sealing` when given). */
export async function publishComposition(nc: NatsConnection, subject: string, composition: Composition, sealing?: StatusSealing): Promise<void> {
  const parts = await encodeComposition(composition, nc.info?.max_payload ?? 1024 * 1024, sealing);
  for (const part of parts) nc.publish(subject, part.data, part.headers ? { headers: part.headers } : undefined);
}

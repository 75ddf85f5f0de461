import { promisify } from 'node:util';
import { gunzip, gzip, constants as zlib } from 'node:zlib';
import { headers, type MsgHdrs } from '@nats-io/transport-node';
import type { Composition } from '../composition.js';
import type { StatusDelta } from '../delta/delta.js';
import { PART_HEADER, SEQ_HEADER, type StatusPart } from './full-wire.js';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** Room left in a NATS message for headers and protocol framing (as on `<subjects>.status`). */
const PAYLOAD_HEADROOM = 8 * 1024;
/** `snapshot` (a whole composition) or `delta` (from `Mesh-Status-Base` to `Mesh-Status-Seq`). */
export const KIND_HEADER = 'Mesh-Status-Kind';
const BASE_HEADER = 'Mesh-Status-Base';
/** On a delta: the stream sequence of the first message of the last snapshot before it, where a reader rebuilds from. */
const SNAPSHOT_HEADER = 'Mesh-Status-Snapshot';

/** On every message: the composition's machines UP, LATE and SILENT (`<up> <late> <silent>`), what statusCounts reads back without the bodies. */
export const COUNTS_HEADER = 'Mesh-Status-Counts';

export type StreamKind = 'snapshot' | 'delta';

/** One composition's message as the status stream holds it: a snapshot or a delta, with what frames it. */
export type StreamEntry =
  | { kind: 'snapshot'; seq: number; composition: Composition; streamSeq: number; time: number }
  | { kind: 'delta'; seq: number; delta: StatusDelta; snapshotAt: number | undefined; streamSeq: number; time: number };

/**
 * A snapshot or a delta as it goes into the status stream: JSON, gzipped when over max_payload,
 * cut into parts `i/n` when still over (NATS 2.9 has no batch publish: parts are consecutive
 * messages of one publisher). Every part carries seq and kind in headers.
 */
export async function encodeStreamEntry(
  kind: StreamKind,
  value: Composition | StatusDelta,
  maxPayload: number,
  framing: { base?: number; snapshotAt?: number; counts?: { up: number; late: number; silent: number } } = {},
): Promise<StatusPart[]> {
  const json = Buffer.from(JSON.stringify(value));
  const room = Math.max(maxPayload - PAYLOAD_HEADROOM, 1024);
  const frame = (part?: string, gz = false) => {
    const h = headers();
    h.set(SEQ_HEADER, String(value.seq));
    h.set(KIND_HEADER, kind);
    if (framing.base !== undefined) h.set(BASE_HEADER, String(framing.base));
    if (framing.snapshotAt !== undefined) h.set(SNAPSHOT_HEADER, String(framing.snapshotAt));
    if (framing.counts) h.set(COUNTS_HEADER, `${framing.counts.up} ${framing.counts.late} ${framing.counts.silent}`);
    if (part) h.set(PART_HEADER, part);
    if (gz) h.set('Content-Encoding', 'gzip');
    return h;
  };
  if (json.length <= room) return [{ data: json, headers: frame() }];
  const packed = await gzipAsync(json, { level: zlib.Z_BEST_SPEED });
  const count = Math.ceil(packed.length / room);
  const parts: StatusPart[] = [];
  for (let i = 0; i < count; i++) parts.push({ data: packed.subarray(i * room, (i + 1) * room), headers: frame(`${i + 1}/${count}`, true) });
  return parts;
}

/** What a reader needs of one stream message (a JsMsg or a StoredMsg). */
export interface StreamMessage {
  seq: number;
  data: Uint8Array;
  headers: MsgHdrs | undefined;
  /** When the stream stored it, in ms since the epoch. */
  time: number;
}

const number = (h: MsgHdrs | undefined, key: string): number | undefined => {
  const raw = h?.get(key);
  const n = raw ? Number(raw) : Number.NaN;
  return Number.isSafeInteger(n) ? n : undefined;
};

/** The header fields of a stream message, read without its body (binary search reads only these). */
export function framingOf(msg: Pick<StreamMessage, 'headers' | 'seq'>): { kind: StreamKind; seq: number; partIndex: number; partCount: number } | undefined {
  const kind = msg.headers?.get(KIND_HEADER);
  const seq = number(msg.headers, SEQ_HEADER);
  if ((kind !== 'snapshot' && kind !== 'delta') || seq === undefined) return undefined;
  const part = msg.headers?.get(PART_HEADER);
  const [partIndex, partCount] = part ? part.split('/').map(Number) : [1, 1];
  if (!(partIndex >= 1 && partIndex <= partCount && partCount <= 100_000)) return undefined;
  return { kind, seq, partIndex, partCount };
}

/** The stream sequence of the first message of the snapshot a delta (or a snapshot's part) belongs after. */
export function snapshotStartOf(msg: Pick<StreamMessage, 'headers' | 'seq'>): number | undefined {
  const framing = framingOf(msg);
  if (!framing) return undefined;
  if (framing.kind === 'snapshot') return msg.seq - (framing.partIndex - 1);
  return number(msg.headers, SNAPSHOT_HEADER);
}

/**
 * Joins stream messages into entries, in stream order: a one-part message is an entry at once; the
 * parts of one are joined, gunzipped and parsed at the last. A part out of place (another seq
 * started, a part missing) drops what was being joined. Throws on a message that is not ours.
 */
export function streamAssembler(): (msg: StreamMessage) => Promise<StreamEntry | undefined> {
  let joining: { seq: number; kind: StreamKind; parts: Uint8Array[]; next: number; first: number } | undefined;
  return async (msg) => {
    const framing = framingOf(msg);
    if (!framing) throw new Error('not a status stream message');
    let body: Buffer;
    let first = msg.seq;
    if (framing.partCount === 1) {
      joining = undefined;
      body = Buffer.from(msg.data.buffer, msg.data.byteOffset, msg.data.byteLength);
      if (msg.headers?.get('Content-Encoding') === 'gzip') body = await gunzipAsync(body);
    } else {
      if (framing.partIndex === 1) joining = { seq: framing.seq, kind: framing.kind, parts: [], next: 1, first: msg.seq };
      if (!joining || joining.seq !== framing.seq || joining.next !== framing.partIndex) {
        joining = undefined;
        return undefined;
      }
      joining.parts.push(msg.data.slice());
      joining.next++;
      if (framing.partIndex < framing.partCount) return undefined;
      first = joining.first;
      body = await gunzipAsync(Buffer.concat(joining.parts));
      joining = undefined;
    }
    const value = JSON.parse(body.toString('utf8'));
    if (typeof value?.seq !== 'number' || value.seq !== framing.seq) throw new Error('a status stream message whose body is not its seq');
    if (framing.kind === 'snapshot') {
      if (!Array.isArray(value.machines)) throw new Error('a snapshot that is not a composition');
      return { kind: 'snapshot', seq: value.seq, composition: Object.freeze(value as Composition), streamSeq: first, time: msg.time };
    }
    if (typeof value.baseSeq !== 'number' || typeof value.machines !== 'object') throw new Error('a delta that is not one');
    return { kind: 'delta', seq: value.seq, delta: value as StatusDelta, snapshotAt: number(msg.headers, SNAPSHOT_HEADER), streamSeq: first, time: msg.time };
  };
}

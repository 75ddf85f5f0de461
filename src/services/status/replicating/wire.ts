import { promisify } from 'node:util';
import { gunzip, gzip, constants as zlib } from 'node:zlib';
import { headers, type Msg, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import type { Composition } from '../composition.js';
import type { StatusDelta } from '../delta/delta.js';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/** Room left in a NATS message for headers and protocol framing. */
const PAYLOAD_HEADROOM = 8 * 1024;
/** A status message is cut into at most this many parts: a reader refuses a header saying more, a writer never writes more. */
export const STATUS_PARTS_MAX = 10_000;

const SEQ_HEADER = 'Mesh-Status-Seq';
export const PART_HEADER = 'Mesh-Status-Part';
/** `snapshot` (a whole composition) or `delta` (from `Mesh-Status-Base` to `Mesh-Status-Seq`); absent on `<subjects>.status`, where every message is a whole composition. */
export const KIND_HEADER = 'Mesh-Status-Kind';
const BASE_HEADER = 'Mesh-Status-Base';
/** On a delta: the stream sequence of the first message of the last snapshot before it, where a reader rebuilds from. */
const SNAPSHOT_HEADER = 'Mesh-Status-Snapshot';
/** On every message: the composition's machines UP, LATE and SILENT (`<up> <late> <silent>`), what statusCounts reads back without the bodies. */
export const COUNTS_HEADER = 'Mesh-Status-Counts';

export type StreamKind = 'snapshot' | 'delta';

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
): Promise<StatusPart[]> {
  const json = Buffer.from(JSON.stringify(value));
  const room = Math.max(maxPayload - PAYLOAD_HEADROOM, 1024);
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
  if (json.length <= room) return [{ data: json, ...(kind && { headers: frame() }) }];
  const packed = await gzipAsync(json, { level: zlib.Z_BEST_SPEED });
  const count = Math.ceil(packed.length / room);
  if (count > STATUS_PARTS_MAX) throw new Error(`status message ${value.seq} needs ${count} parts, over ${STATUS_PARTS_MAX}`);
  const parts: StatusPart[] = [];
  for (let i = 0; i < count; i++) parts.push({ data: packed.subarray(i * room, (i + 1) * room), headers: frame(`${i + 1}/${count}`) });
  return parts;
}

/** A snapshot or a delta as it goes into the status stream (`encodeStatusMessage`). */
export const encodeStreamEntry = (kind: StreamKind, value: Composition | StatusDelta, maxPayload: number, framing: StreamFraming = {}): Promise<StatusPart[]> =>
  encodeStatusMessage(kind, value, maxPayload, framing);

/** A composition as it travels on `<subjects>.status` (`encodeStatusMessage`): plain JSON in one message when it fits. */
export const encodeComposition = (composition: Composition, maxPayload: number): Promise<StatusPart[]> =>
  encodeStatusMessage(undefined, composition, maxPayload);

/** Publishes a composition on `subject` as `encodeComposition` frames it. */
export async function publishComposition(nc: NatsConnection, subject: string, composition: Composition): Promise<void> {
  const parts = await encodeComposition(composition, nc.info?.max_payload ?? 1024 * 1024);
  for (const part of parts) nc.publish(subject, part.data, part.headers ? { headers: part.headers } : undefined);
}

/** What a reader needs of one message (a JsMsg, a StoredMsg, or a core NATS message with seq 0). */
export interface StreamMessage {
  seq: number;
  data: Uint8Array;
  headers: MsgHdrs | undefined;
  /** When the stream stored it, in ms since the epoch. */
  time: number;
}

/** One composition's message as the status stream holds it: a snapshot or a delta, with what frames it. */
export type StreamEntry =
  | { kind: 'snapshot'; seq: number; composition: Composition; streamSeq: number; time: number }
  | { kind: 'delta'; seq: number; delta: StatusDelta; snapshotAt: number | undefined; streamSeq: number; time: number };

const number = (h: MsgHdrs | undefined, key: string): number | undefined => {
  const raw = h?.get(key);
  const n = raw ? Number(raw) : Number.NaN;
  return Number.isSafeInteger(n) ? n : undefined;
};

/** The part `i/n` a message says it is (1/1 without the header); undefined when the header is not one. */
function partOf(h: MsgHdrs | undefined): { partIndex: number; partCount: number } | undefined {
  const part = h?.get(PART_HEADER);
  const [partIndex, partCount] = part ? part.split('/').map(Number) : [1, 1];
  return Number.isInteger(partIndex) && partIndex >= 1 && partIndex <= partCount && partCount <= STATUS_PARTS_MAX ? { partIndex, partCount } : undefined;
}

/** The header fields of a stream message, read without its body (binary search reads only these). */
export function framingOf(msg: Pick<StreamMessage, 'headers' | 'seq'>): { kind: StreamKind; seq: number; partIndex: number; partCount: number } | undefined {
  const kind = msg.headers?.get(KIND_HEADER);
  const seq = number(msg.headers, SEQ_HEADER);
  if ((kind !== 'snapshot' && kind !== 'delta') || seq === undefined) return undefined;
  const part = partOf(msg.headers);
  return part && { kind, seq, ...part };
}

/** The stream sequence of the first message of the snapshot a delta (or a snapshot's part) belongs after. */
export function snapshotStartOf(msg: Pick<StreamMessage, 'headers' | 'seq'>): number | undefined {
  const framing = framingOf(msg);
  if (!framing) return undefined;
  if (framing.kind === 'snapshot') return msg.seq - (framing.partIndex - 1);
  return number(msg.headers, SNAPSHOT_HEADER);
}

/**
 * Joins status messages into entries, in order: a one-part message is an entry at once (gunzipped
 * when it says so); the parts of one are joined, gunzipped and parsed at the last. A part out of
 * place (another message started, a part missing) drops what was being joined; a part of an older
 * seq than the one being joined is ignored. Throws on a message that is not one. With `whole`
 * (the reader of `<subjects>.status`), a message without `Mesh-Status-Kind` is a whole composition.
 */
export function statusAssembler(options: { whole?: boolean } = {}): (msg: StreamMessage) => Promise<StreamEntry | undefined> {
  let joining: { seq: number; kind: StreamKind; parts: Uint8Array[]; next: number; first: number } | undefined;
  return async (msg) => {
    const framing = framingOf(msg) ?? (options.whole && !msg.headers?.get(KIND_HEADER) ? wholeFraming(msg) : undefined);
    if (!framing) throw new Error('not a status message');
    let body: Buffer;
    let first = msg.seq;
    if (framing.partCount === 1) {
      body = Buffer.from(msg.data.buffer, msg.data.byteOffset, msg.data.byteLength);
      if (msg.headers?.get('Content-Encoding') === 'gzip') body = await gunzipAsync(body);
    } else {
      if (framing.seq === undefined) throw new Error('a status part without its seq');
      if (joining && framing.seq < joining.seq) return undefined;
      if (framing.partIndex === 1) joining = { seq: framing.seq, kind: framing.kind, parts: [], next: 1, first: msg.seq };
      if (!joining || joining.seq !== framing.seq || joining.kind !== framing.kind || joining.next !== framing.partIndex) {
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
    if (typeof value?.seq !== 'number' || (framing.seq !== undefined && value.seq !== framing.seq))
      throw new Error('a status message whose body is not its seq');
    if (framing.kind === 'snapshot') {
      if (!Array.isArray(value.machines)) throw new Error('a snapshot that is not a composition');
      return { kind: 'snapshot', seq: value.seq, composition: Object.freeze(value as Composition), streamSeq: first, time: msg.time };
    }
    if (typeof value.baseSeq !== 'number' || typeof value.machines !== 'object') throw new Error('a delta that is not one');
    return { kind: 'delta', seq: value.seq, delta: value as StatusDelta, snapshotAt: number(msg.headers, SNAPSHOT_HEADER), streamSeq: first, time: msg.time };
  };
}

/** A message of `<subjects>.status`: a whole composition, its seq in a header only when it is cut into parts. */
function wholeFraming(msg: Pick<StreamMessage, 'headers'>): { kind: StreamKind; seq: number | undefined; partIndex: number; partCount: number } | undefined {
  const part = partOf(msg.headers);
  return part && { kind: 'snapshot', seq: number(msg.headers, SEQ_HEADER), ...part };
}

/** Reassembles compositions from `<subjects>.status` messages (`statusAssembler` with `whole`). */
export function compositionAssembler(): (msg: Pick<Msg, 'data' | 'headers'>) => Promise<Composition | undefined> {
  const assemble = statusAssembler({ whole: true });
  return async (msg) => {
    const entry = await assemble({ seq: 0, data: msg.data, headers: msg.headers, time: Date.now() });
    return entry?.kind === 'snapshot' ? entry.composition : undefined;
  };
}

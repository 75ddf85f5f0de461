import type { MsgHdrs } from '@nats-io/transport-node';
import type { Composition } from '../composition.js';
import type { StatusDelta } from '../delta/delta.js';

/** A status message is cut into at most this many parts: a reader refuses a header saying more, a writer never writes more. */
export const STATUS_PARTS_MAX = 10_000;
/**
 * A status message's JSON is at most this many bytes once gunzipped (and its parts, joined, at most
 * this many gzipped): a reader stops gunzipping past it (zlib's `maxOutputLength`) and refuses the
 * message. Sized from the largest honest composition: a million machines at 150 bytes each (measured
 * on test/fixtures/compositions.ts: name, site, state, lastHeardAt, modules, a holding) with their
 * seats is about 170 MB, twice that with long names and several holdings; 500 MiB holds it and stays
 * under V8's longest string (2^29 - 24 characters), which JSON.parse would need anyway.
 */
export const STATUS_UNZIPPED_MAX = 500 * 1024 * 1024;
/**
 * The highest seq a status message may carry: 2^48, a composition a millisecond for 8,900 years,
 * and far below 2^53, so a seq plus anything a reader adds stays an exact integer.
 */
export const STATUS_SEQ_MAX = 2 ** 48;
/**
 * A composition more than this many seqs past the one held is refused, not taken: seqs grow by one
 * a composition, so this is over three years of one a second; only a forged or broken one jumps so.
 * (A replica holding nothing takes any bounded seq.)
 */
export const STATUS_SEQ_JUMP_MAX = 100_000_000;

/** Whether `n` can be a composition's seq (STATUS_SEQ_MAX). */
export const isStatusSeq = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 && n <= STATUS_SEQ_MAX;

export const SEQ_HEADER = 'Mesh-Status-Seq';
export const PART_HEADER = 'Mesh-Status-Part';
/** The replica that published a status message, its serving term, the id of the key that sealed it, and the seal (HMAC, base64url). */
export const REPLICA_HEADER = 'Mesh-Status-Replica';
export const TERM_HEADER = 'Mesh-Status-Term';
export const KEY_HEADER = 'Mesh-Status-Key';
export const SEAL_HEADER = 'Mesh-Status-Seal';
/** The headers a seal covers, with the body: everything that frames or attributes a message. */
const SEALED_HEADERS = [
  'Mesh-Status-Seq',
  'Mesh-Status-Kind',
  'Mesh-Status-Base',
  'Mesh-Status-Snapshot',
  'Mesh-Status-Counts',
  'Mesh-Status-Part',
  'Content-Encoding',
  REPLICA_HEADER,
  TERM_HEADER,
  KEY_HEADER,
] as const;
const SEAL_VERSION = Buffer.from('mesh-status-seal/1\n');

/**
 * The bytes a status message's seal is the HMAC of: a version, each framing header as `name=value`
 * (empty when absent) on its line, then the body. A header moved between messages, dropped or
 * changed breaks the seal as surely as a changed body.
 */
export function sealedBytes(h: MsgHdrs, data: Uint8Array): Uint8Array[] {
  const framing = SEALED_HEADERS.map((name) => `${name}=${h.get(name)}\n`).join('');
  return [SEAL_VERSION, Buffer.from(framing), data];
}

/**
 * How status messages are sealed and checked (`replicating/seal.ts` makes one from the replica
 * key and the serving lease): `seal` signs one part as the serving replica, `check` answers why a
 * message is refused (undefined when it is the serving replica's), `refuse` counts and logs a
 * refusal. Without one, nothing is sealed or checked (a codec test, a tool reading the subject).
 */
export interface StatusSealing {
  seal(h: MsgHdrs, data: Uint8Array): void;
  check(h: MsgHdrs | undefined, data: Uint8Array): Promise<StatusRefusal | undefined>;
  refuse(reason: StatusRefusal, detail: Record<string, unknown>): void;
}

/** Why a status message was refused. */
export const STATUS_REFUSALS = ['unsealed', 'forged', 'not-serving', 'stale-term', 'seq-out-of-bounds', 'seq-jump', 'too-large', 'malformed'] as const;
export type StatusRefusal = (typeof STATUS_REFUSALS)[number];

/** A status message refused by a reader: it is ignored, counted and (rate-limited) logged. */
export class StatusRefused extends Error {
  constructor(
    readonly reason: StatusRefusal,
    message: string,
  ) {
    super(message);
    this.name = 'StatusRefused';
  }
}

/** `snapshot` (a whole composition) or `delta` (from `Mesh-Status-Base` to `Mesh-Status-Seq`); absent on `<subjects>.status`, where every message is a whole composition. */
export const KIND_HEADER = 'Mesh-Status-Kind';
export const BASE_HEADER = 'Mesh-Status-Base';
/** On a delta: the stream sequence of the first message of the last snapshot before it, where a reader rebuilds from. */
export const SNAPSHOT_HEADER = 'Mesh-Status-Snapshot';
/** On every message: the composition's machines UP, LATE and SILENT (`<up> <late> <silent>`), what statusCounts reads back without the bodies. */
export const COUNTS_HEADER = 'Mesh-Status-Counts';

export type StreamKind = 'snapshot' | 'delta';

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

/** A header's value as a safe integer; undefined when absent or not one. */
export const headerNumber = (h: MsgHdrs | undefined, key: string): number | undefined => {
  const raw = h?.get(key);
  const n = raw ? Number(raw) : Number.NaN;
  return Number.isSafeInteger(n) ? n : undefined;
};
/** A seq header: undefined unless a bounded seq (`isStatusSeq`). */
const seqHeader = (h: MsgHdrs | undefined, key: string): number | undefined => {
  const n = headerNumber(h, key);
  return isStatusSeq(n) ? n : undefined;
};

/** The composition seq a status message's header names (bounded, `isStatusSeq`); undefined without one. */
export const statusSeqOf = (h: MsgHdrs | undefined): number | undefined => seqHeader(h, SEQ_HEADER);

/** The part `i/n` a message says it is (1/1 without the header); undefined when the header is not one. */
export function partOf(h: MsgHdrs | undefined): { partIndex: number; partCount: number } | undefined {
  const part = h?.get(PART_HEADER);
  const [partIndex, partCount] = part ? part.split('/').map(Number) : [1, 1];
  return Number.isInteger(partIndex) && partIndex >= 1 && partIndex <= partCount && partCount <= STATUS_PARTS_MAX ? { partIndex, partCount } : undefined;
}

/** The header fields of a stream message, read without its body (binary search reads only these). */
export function framingOf(msg: Pick<StreamMessage, 'headers' | 'seq'>): { kind: StreamKind; seq: number; partIndex: number; partCount: number } | undefined {
  const kind = msg.headers?.get(KIND_HEADER);
  const seq = seqHeader(msg.headers, SEQ_HEADER);
  if ((kind !== 'snapshot' && kind !== 'delta') || seq === undefined) return undefined;
  const part = partOf(msg.headers);
  return part && { kind, seq, ...part };
}

/** The stream sequence of the first message of the snapshot a delta (or a snapshot's part) belongs after. */
export function snapshotStartOf(msg: Pick<StreamMessage, 'headers' | 'seq'>): number | undefined {
  const framing = framingOf(msg);
  if (!framing) return undefined;
  if (framing.kind === 'snapshot') return msg.seq - (framing.partIndex - 1);
  return headerNumber(msg.headers, SNAPSHOT_HEADER);
}

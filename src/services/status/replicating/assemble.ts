import { createGunzip } from 'node:zlib';
import { parseChunked } from '@discoveryjs/json-ext';
import type { Msg } from '@nats-io/transport-node';
import type { Composition } from '../composition.js';
import type { StatusDelta } from '../delta/delta.js';
import {
  framingOf,
  headerNumber,
  isStatusSeq,
  KIND_HEADER,
  partOf,
  SEQ_HEADER,
  SNAPSHOT_HEADER,
  STATUS_SEQ_JUMP_MAX,
  STATUS_SEQ_MAX,
  STATUS_UNZIPPED_MAX,
  StatusRefused,
  type StatusSealing,
  type StreamEntry,
  type StreamKind,
  type StreamMessage,
  statusSeqOf,
} from './wire.js';

// Reading status messages: joined from their parts, gunzipped within bounds, parsed and checked
// (wire.ts frames them: headers, seqs, seals, refusals).

/**
 * Past this much gunzipped output, a message whose output is over GUNZIP_RATIO_MAX times the gzip it
 * came from is counted rather than kept (gunzipBounded): a composition's JSON never gzips that well,
 * a gzip bomb does (zeros gzip about 1,000 to 1).
 */
const GUNZIP_KEPT_BEFORE_JUDGING = 64 * 1024 * 1024;
/** Output over this many times its gzipped input is a bomb's, not a composition's (whose JSON gzips some 10 to 1). */
const GUNZIP_RATIO_MAX = 100;

/**
 * zlib hands its output over in pieces of this size (16 KiB unless told): 500 MiB in 16 KiB pieces
 * took 4 s on this machine, in 256 KiB pieces under 1 s.
 */
const GUNZIP_CHUNK_BYTES = 256 * 1024;

/** What one gunzip pass found: the output kept, or only how long it is (counted, not kept). */
type Gunzipped = { kept: Buffer } | { counted: number };

/**
 * Gunzips `body` as a stream, stopping at the first byte past STATUS_UNZIPPED_MAX. With `judging`,
 * output past GUNZIP_KEPT_BEFORE_JUDGING that is over GUNZIP_RATIO_MAX times the input read so far
 * is dropped and only counted from then on: a bomb is refused holding 64 MiB, not 500.
 */
function gunzipPass(body: Buffer, judging: boolean): Promise<Gunzipped> {
  return new Promise((resolve, reject) => {
    const gunzip = createGunzip({ chunkSize: GUNZIP_CHUNK_BYTES });
    let chunks: Buffer[] | undefined = [];
    let length = 0;
    gunzip.on('data', (chunk: Buffer) => {
      length += chunk.length;
      if (length > STATUS_UNZIPPED_MAX) {
        chunks = undefined;
        gunzip.destroy();
        reject(new StatusRefused('too-large', `a status message over ${STATUS_UNZIPPED_MAX} bytes gunzipped`));
        return;
      }
      chunks?.push(chunk);
      if (judging && chunks && length > GUNZIP_KEPT_BEFORE_JUDGING && length > GUNZIP_RATIO_MAX * gunzip.bytesWritten) chunks = undefined;
    });
    gunzip.on('error', (error) => reject(new StatusRefused('malformed', `a status message that does not gunzip: ${String(error)}`)));
    gunzip.on('end', () => {
      try {
        resolve(chunks ? { kept: Buffer.concat(chunks, length) } : { counted: length });
      } catch (error) {
        // Longer than a Buffer may be (kMaxLength): too large, whatever STATUS_UNZIPPED_MAX says.
        reject(error instanceof RangeError ? new StatusRefused('too-large', `a status message over ${STATUS_UNZIPPED_MAX} bytes gunzipped`) : error);
      }
    });
    gunzip.end(body);
  });
}

/**
 * Gunzips a status message's body, refusing (`too-large`) one whose JSON would pass
 * STATUS_UNZIPPED_MAX. The output is counted as it comes and the gunzip stopped at the limit; a
 * message that gunzips like a bomb is counted without being kept (a 500 MiB refusal held 500 MiB),
 * and gunzipped again, kept, in the odd case that it ends under the limit: what is refused, and
 * what is taken, is the same either way.
 */
async function gunzipBounded(body: Buffer): Promise<Buffer> {
  const first = await gunzipPass(body, true);
  if ('kept' in first) return first.kept;
  const again = await gunzipPass(body, false);
  if ('kept' in again) return again.kept;
  throw new StatusRefused('malformed', 'a status message that gunzipped to another length the second time');
}

/**
 * Past this many bytes a status message's JSON is parsed in pieces of this size, the event loop
 * free between them: a million machines' composition is 155 MB, which `JSON.parse` read in one
 * stretch of seconds on every replica that received it whole, the lease refresh waiting.
 */
const STATUS_PARSE_PIECE_BYTES = 1024 * 1024;

/** The JSON in `body`: at once when small, else piece by piece (`parseChunked`), a turn of the loop between pieces. */
async function parseJson(body: Buffer): Promise<unknown> {
  if (body.length <= STATUS_PARSE_PIECE_BYTES) return JSON.parse(body.toString('utf8'));
  return parseChunked(async function* pieces() {
    for (let at = 0; at < body.length; at += STATUS_PARSE_PIECE_BYTES) {
      if (at > 0) await new Promise((resolve) => setImmediate(resolve));
      yield body.subarray(at, at + STATUS_PARSE_PIECE_BYTES);
    }
  });
}

/** The status message in `body`, checked for its shape and bounded seqs; throws StatusRefused when it is not one. */
async function parseStatus(body: Buffer, framing: { kind: StreamKind; seq: number | undefined }): Promise<Composition | StatusDelta> {
  let value: Composition | StatusDelta;
  try {
    value = (await parseJson(body)) as Composition | StatusDelta;
  } catch {
    throw new StatusRefused('malformed', 'a status message that is not JSON');
  }
  if (typeof value?.seq !== 'number' || (framing.seq !== undefined && value.seq !== framing.seq))
    throw new StatusRefused('malformed', 'a status message whose body is not its seq');
  if (!isStatusSeq(value.seq)) throw new StatusRefused('seq-out-of-bounds', `a status message whose seq is not an integer from 0 to ${STATUS_SEQ_MAX}`);
  if (framing.kind === 'snapshot') {
    if (!Array.isArray((value as Composition).machines)) throw new StatusRefused('malformed', 'a snapshot that is not a composition');
    return value;
  }
  const delta = value as StatusDelta;
  if (typeof delta.baseSeq !== 'number' || typeof delta.machines !== 'object') throw new StatusRefused('malformed', 'a delta that is not one');
  if (!isStatusSeq(delta.baseSeq) || delta.baseSeq >= delta.seq)
    throw new StatusRefused('seq-out-of-bounds', 'a delta whose base is not a bounded seq before its own');
  return value;
}

/** What an assembler is given: `whole` reads `<subjects>.status`; `sealing` checks every message first (and counts what it refuses). */
export interface AssemblerOptions {
  whole?: boolean;
  sealing?: StatusSealing;
  /** The seq of the composition held, if any: one more than STATUS_SEQ_JUMP_MAX past it is refused. */
  held?: () => number | undefined;
}

/**
 * Joins status messages into entries, in order: a one-part message is an entry at once (gunzipped
 * when it says so); the parts of one are joined, gunzipped and parsed at the last. A part out of
 * place (another message started, a part missing) drops what was being joined; a part of an older
 * seq than the one being joined is ignored. With `whole` (the reader of `<subjects>.status`), a
 * message without `Mesh-Status-Kind` is a whole composition.
 *
 * With `sealing`, each message's seal and publisher are checked before anything else is read (an
 * outsider's part is never joined nor gunzipped), and a refused message is counted, logged
 * (rate-limited) and answered undefined; without it, a refused message throws StatusRefused.
 * Either way: seqs are bounded (`isStatusSeq`, STATUS_SEQ_JUMP_MAX past `held`), gunzipping stops
 * at STATUS_UNZIPPED_MAX, and parts being joined hold at most that many bytes.
 */
export function statusAssembler(options: AssemblerOptions = {}): (msg: StreamMessage) => Promise<StreamEntry | undefined> {
  let joining: { seq: number; kind: StreamKind; parts: Uint8Array[]; bytes: number; next: number; first: number } | undefined;
  const assemble = async (msg: StreamMessage): Promise<StreamEntry | undefined> => {
    const framing = framingOf(msg) ?? (options.whole && !msg.headers?.get(KIND_HEADER) ? wholeFraming(msg) : undefined);
    if (!framing) throw new StatusRefused(msg.headers?.get(SEQ_HEADER) ? 'seq-out-of-bounds' : 'malformed', 'not a status message');
    if (options.sealing) {
      const refusal = await options.sealing.check(msg.headers, msg.data);
      if (refusal) throw new StatusRefused(refusal, 'a status message not sealed by the serving replica');
    }
    let body: Buffer;
    let first = msg.seq;
    if (framing.partCount === 1) {
      body = Buffer.from(msg.data.buffer, msg.data.byteOffset, msg.data.byteLength);
      if (msg.headers?.get('Content-Encoding') === 'gzip') body = await gunzipBounded(body);
    } else {
      if (framing.seq === undefined) throw new StatusRefused('malformed', 'a status part without its seq');
      if (joining && framing.seq < joining.seq) return undefined;
      if (framing.partIndex === 1) joining = { seq: framing.seq, kind: framing.kind, parts: [], bytes: 0, next: 1, first: msg.seq };
      if (!joining || joining.seq !== framing.seq || joining.kind !== framing.kind || joining.next !== framing.partIndex) {
        joining = undefined;
        return undefined;
      }
      joining.bytes += msg.data.byteLength;
      if (joining.bytes > STATUS_UNZIPPED_MAX) {
        joining = undefined;
        throw new StatusRefused('too-large', `a status message over ${STATUS_UNZIPPED_MAX} bytes in its parts`);
      }
      joining.parts.push(msg.data.slice());
      joining.next++;
      if (framing.partIndex < framing.partCount) return undefined;
      first = joining.first;
      const parts = joining.parts;
      joining = undefined;
      body = await gunzipBounded(Buffer.concat(parts));
    }
    const value = await parseStatus(body, framing);
    const held = options.held?.();
    if (held !== undefined && value.seq > held + STATUS_SEQ_JUMP_MAX)
      throw new StatusRefused('seq-jump', `a status message ${value.seq - held} seqs past the one held, over ${STATUS_SEQ_JUMP_MAX}`);
    if (framing.kind === 'snapshot')
      return { kind: 'snapshot', seq: value.seq, composition: Object.freeze(value as Composition), streamSeq: first, time: msg.time };
    return {
      kind: 'delta',
      seq: value.seq,
      delta: value as StatusDelta,
      snapshotAt: headerNumber(msg.headers, SNAPSHOT_HEADER),
      streamSeq: first,
      time: msg.time,
    };
  };
  const { sealing } = options;
  if (!sealing) return assemble;
  return (msg) =>
    assemble(msg).catch((error) => {
      if (!(error instanceof StatusRefused)) throw error;
      sealing.refuse(error.reason, { err: error.message, seq: msg.headers?.get(SEQ_HEADER), streamSeq: msg.seq || undefined });
      return undefined;
    });
}

/** A message of `<subjects>.status`: a whole composition, its seq in a header when it is cut into parts (or sealed). */
function wholeFraming(msg: Pick<StreamMessage, 'headers'>): { kind: StreamKind; seq: number | undefined; partIndex: number; partCount: number } | undefined {
  const part = partOf(msg.headers);
  const seq = statusSeqOf(msg.headers);
  if (msg.headers?.get(SEQ_HEADER) && seq === undefined) return undefined;
  return part && { kind: 'snapshot', seq, ...part };
}

/**
 * Reassembles compositions from `<subjects>.status` messages (`statusAssembler` with `whole`):
 * with `sealing`, only the serving replica's are taken; with `held`, none more than
 * STATUS_SEQ_JUMP_MAX past the one held.
 */
export function compositionAssembler(
  options: Pick<AssemblerOptions, 'sealing' | 'held'> = {},
): (msg: Pick<Msg, 'data' | 'headers'>) => Promise<Composition | undefined> {
  const assemble = statusAssembler({ ...options, whole: true });
  return async (msg) => {
    const entry = await assemble({ seq: 0, data: msg.data, headers: msg.headers, time: Date.now() });
    return entry?.kind === 'snapshot' ? entry.composition : undefined;
  };
}

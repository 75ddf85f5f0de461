import { promisify } from 'node:util';
import { gunzip, gzip, constants as zlib } from 'node:zlib';
import { headers, type Msg, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import type { Composition } from '../composition.js';

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

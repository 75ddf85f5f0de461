/** WebSocket framing (RFC 6455) by hand, so the fuzzer can send frames no client library would: odd opcodes, unmasked, huge. */

export const TEXT = 0x1;
export const BINARY = 0x2;
export const CLOSE = 0x8;

/** One frame as a client sends it: FIN set, masked (with a zero key, which XORs to the same bytes) unless `masked` is false. */
export function clientFrame(opcode: number, payload: Buffer, masked = true): Buffer {
  const length = payload.length;
  const maskBit = masked ? 0x80 : 0;
  const head =
    length < 126
      ? Buffer.from([0x80 | (opcode & 0xf), maskBit | length])
      : length < 65_536
        ? Buffer.from([0x80 | (opcode & 0xf), maskBit | 126, length >> 8, length & 0xff])
        : Buffer.concat([Buffer.from([0x80 | (opcode & 0xf), maskBit | 127]), bigLength(length)]);
  return Buffer.concat([head, masked ? Buffer.alloc(4) : Buffer.alloc(0), payload]);
}

function bigLength(length: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(length));
  return b;
}

/** A frame the server sent: its opcode and payload (as text), and for a close its code. */
export interface ServerFrame {
  opcode: number;
  text: string;
  closeCode?: number;
}

/** Reads the whole frames `raw` holds (a server's are unmasked); a frame cut short at the end is left out. */
export function serverFrames(raw: Buffer): ServerFrame[] {
  const frames: ServerFrame[] = [];
  let at = 0;
  while (at + 2 <= raw.length) {
    const opcode = raw[at]! & 0xf;
    let length = raw[at + 1]! & 0x7f;
    let start = at + 2;
    if (length === 126) {
      if (start + 2 > raw.length) break;
      length = raw.readUInt16BE(start);
      start += 2;
    } else if (length === 127) {
      if (start + 8 > raw.length) break;
      length = Number(raw.readBigUInt64BE(start));
      start += 8;
    }
    if (start + length > raw.length) break;
    const payload = raw.subarray(start, start + length);
    frames.push(
      opcode === CLOSE
        ? { opcode, text: payload.subarray(2).toString('utf8'), closeCode: payload.length >= 2 ? payload.readUInt16BE(0) : undefined }
        : { opcode, text: payload.toString('utf8') },
    );
    at = start + length;
  }
  return frames;
}

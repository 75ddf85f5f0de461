import { connect } from 'node:net';

/** What one raw exchange saw: the status line's code (0 when none came), the headers, the body as read (de-chunked), and how it ended. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** `closed` (the server ended it), `cut` (we stopped reading at the deadline: a stream), `refused` (no connection), `reset`. */
  ended: 'closed' | 'cut' | 'refused' | 'reset';
}

/** Nothing a fuzz request is answered with is kept past this: a 282 MB answer is judged on its start. */
const ANSWER_KEPT_BYTES = 256 * 1024;

/** Undoes `Transfer-Encoding: chunked` on what was read, as far as it goes (a stream cut at the deadline ends mid-chunk). */
function dechunk(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  while (at < raw.length) {
    const eol = raw.indexOf('\r\n', at);
    if (eol === -1) break;
    const size = Number.parseInt(raw.subarray(at, eol).toString('latin1'), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(raw.subarray(eol + 2, Math.min(eol + 2 + size, raw.length)));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/** Reads a raw HTTP/1.1 answer: status line, headers, body. */
function parseAnswer(raw: Buffer, ended: RawAnswer['ended']): RawAnswer {
  const head = raw.indexOf('\r\n\r\n');
  const headText = (head === -1 ? raw : raw.subarray(0, head)).toString('latin1');
  const [statusLine = '', ...lines] = headText.split('\r\n');
  const status = Number(/^HTTP\/\d\.\d (\d{3})/.exec(statusLine)?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = head === -1 ? Buffer.alloc(0) : raw.subarray(head + 4);
  const body = (headers['transfer-encoding']?.includes('chunked') ? dechunk(rest) : rest).toString('utf8');
  return { status, headers, body, ended };
}

/** Whether `raw` holds a whole answer: its head, and all of the body its headers announce (none for HEAD or a 101, 204 or 304). */
function complete(raw: Buffer, bodiless: boolean): boolean {
  const head = raw.indexOf('\r\n\r\n');
  if (head === -1) return false;
  const answer = parseAnswer(raw.subarray(0, head + 4), 'closed');
  if (answer.status === 100) return complete(raw.subarray(head + 4), bodiless);
  if (bodiless || answer.status === 101 || answer.status === 204 || answer.status === 304) return true;
  const length = answer.headers['content-length'];
  if (length !== undefined) return raw.length - head - 4 >= Number(length);
  if (answer.headers['transfer-encoding']?.includes('chunked')) return raw.subarray(-5).toString('latin1') === '0\r\n\r\n';
  return false;
}

/**
 * Sends `request` (the bytes of a whole HTTP/1.1 request, whatever they hold: a client library
 * would refuse to send most of what the fuzzer makes) to 127.0.0.1:`port` and reads the answer
 * until it is whole or the server closes, or for `readMs` at most (a stream is cut then). Never throws.
 */
export function rawExchange(port: number, request: Buffer, readMs: number, options: { bodiless?: boolean } = {}): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    let done = false;
    const socket = connect({ host: '127.0.0.1', port });
    const finish = (ended: RawAnswer['ended']) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(parseAnswer(Buffer.concat(chunks), ended));
    };
    const timer = setTimeout(() => finish('cut'), readMs);
    socket.on('connect', () => socket.write(request));
    socket.on('data', (chunk: Buffer) => {
      if (kept < ANSWER_KEPT_BYTES) chunks.push(chunk.subarray(0, ANSWER_KEPT_BYTES - kept));
      kept += chunk.length;
      if (kept <= ANSWER_KEPT_BYTES && complete(Buffer.concat(chunks), options.bodiless ?? false)) finish('closed');
    });
    socket.on('error', (error: NodeJS.ErrnoException) => finish(error.code === 'ECONNREFUSED' ? 'refused' : chunks.length ? 'closed' : 'reset'));
    socket.on('close', () => finish('closed'));
  });
}

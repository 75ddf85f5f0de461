import { connect as tcpConnect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { type NatsConnection, headers as natsHeaders } from '@nats-io/transport-node';
import fc from 'fast-check';
import { graphqlRequest, mutatedJson, mutatedText, SUBSCRIPTIONS, validComposition, validNews, validVerbCall } from './material.js';
import { type RawAnswer, rawExchange } from './raw-http.js';
import { BINARY, CLOSE, clientFrame, type ServerFrame, serverFrames, TEXT } from './ws-frames.js';

// Every door of a running gateway, each as: what is sent (a JSON value, so that a failure is kept
// and replayed as it was: test/fuzz/seeds.ts), how it is sent, and how the answer is judged.

/** What the fuzzer knows of the gateway it throws at. */
export interface Target {
  port: number;
  nc: NatsConnection;
  subjects: string;
  controller: string;
  /** What each `<token:…>`/`<jwt:…>` placeholder of an input stands for on this gateway (its tokens file and JWKS; made-up values on an open one). */
  credentials: Record<string, string>;
}

/** How one input was answered: passed (with what it was answered, for the counts), or failed, with the kind of failure and what showed it. */
export type Verdict = { ok: true; outcome: string } | { ok: false; kind: FailureKind; outcome: string; detail: string };

/** What the fuzzer fails a run on (besides a crash, memory and /health, which the runner judges). */
export type FailureKind = 'internal' | 'http-5xx' | 'ws-internal-close' | 'unanswered' | 'unreachable';

export interface Door<T> {
  name: string;
  input: fc.Arbitrary<T>;
  send(target: Target, input: T): Promise<Verdict>;
}

/** A door's answer counts as INTERNAL when it names the code, or is Yoga's masked error. */
const INTERNAL = /"code"\s*:\s*"INTERNAL(_SERVER_ERROR)?"|Unexpected error\./;
/** How long a stream (SSE, multipart, a socket) is read before it is cut. */
const STREAM_READ_MS = 1_500;
/** How long an answer is awaited at most: past it a verb's request counts as unanswered. */
const ANSWER_WAIT_MS = 20_000;
/** How long an HTTP answer is read at most: a body shorter than its Content-Length leaves the server waiting, which is no failure. */
const HTTP_READ_MS = 5_000;
/** A pause after each NATS publish: news is cheap to send, and would otherwise take the cores from every other door. */
const PUBLISH_PAUSE_MS = 10;
const CREDENTIAL_NAMES = ['token:read', 'token:act', 'token:admin', 'jwt:read', 'jwt:admin', 'jwt:expired', 'jwt:other-audience'] as const;

/** An input with its placeholders (`<host>`, `<controller>`, `<token:read>`…) replaced by this gateway's values. */
function resolve(target: Target, text: string): string {
  return text.replace(/<(host|controller|token:[a-z]+|jwt:[a-z-]+)>/g, (whole, name: string) => {
    if (name === 'host') return `127.0.0.1:${target.port}`;
    if (name === 'controller') return target.controller;
    return target.credentials[name] ?? whole;
  });
}

// ---------------------------------------------------------------------------------------------
// HTTP

/** One HTTP request as sent: `raw` bytes as they are, or a request line, headers and a body framed by Content-Length (off by `lengthOff`) or chunked. */
export interface HttpInput {
  method: string;
  target: string;
  headers: [string, string][];
  body: string;
  chunked?: boolean;
  lengthOff?: number;
  raw?: string;
}

/** `text` as a query string's value: percent-encoded from its UTF-8 bytes (encodeURIComponent throws on a lone surrogate). */
const percentEncoded = (text: string): string =>
  [...Buffer.from(text, 'utf8')]
    .map((b) => (/[A-Za-z0-9_.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0').toUpperCase()}`))
    .join('');

const hostile = (...values: string[]) => fc.constantFrom(...values);
const aHost = fc.oneof(
  { weight: 6, arbitrary: fc.constant('<host>') },
  {
    weight: 3,
    arbitrary: hostile(
      'localhost:99999',
      '[::1',
      '[::1]:99999',
      '',
      ' ',
      'a b',
      '%',
      ':',
      '::::',
      'localhost:-1',
      'ü.example',
      '<host>, evil',
      'x'.repeat(9000),
      '[',
      'localhost:0x50',
      '\u0000',
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
);
const anOrigin = fc.oneof(
  hostile(
    'http://<host>',
    'null',
    'http://localhost:99999',
    'http://[::1',
    'https://[::1]:99999',
    'ftp://x',
    '://',
    'http://a b',
    'http://%zz',
    'x'.repeat(9000),
    '',
    '*',
  ),
  fc.string({ unit: 'binary', maxLength: 30 }),
);
const aCookie = fc.oneof(
  hostile('a=b', 'mesh_session=%ff%fe', '=', ';;;', 'a='.repeat(5000), '\u0000=1', '__proto__=1'),
  fc.string({ unit: 'binary', maxLength: 60 }),
);
/** A JWT-shaped bearer, of any length (issue 34: a socket's connection_init may carry 1 MB). */
const aJwtShape = fc.nat({ max: 300_000 }).map((n) => `eyJhbGciOiJFUzI1NiJ9.eyJ${'A'.repeat(n)}.c2ln`);
const anAuthorization = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...CREDENTIAL_NAMES).map((name) => `Bearer <${name}>`) },
  {
    weight: 2,
    arbitrary: hostile(
      '',
      'Bearer',
      'Bearer ',
      'Basic Zm9vOmJhcg==',
      'bearer <token:read>',
      'Bearer a.b.c',
      'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.',
      'Bearer \u0000',
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom(...CREDENTIAL_NAMES).chain((name) => mutatedText(`Bearer <${name}>`)) },
  { weight: 1, arbitrary: aJwtShape.map((jwt) => `Bearer ${jwt}`) },
);
const aContentType = fc.oneof(
  hostile(
    'application/json',
    'application/json',
    'application/graphql+json',
    'application/graphql-response+json',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=fz',
    'multipart/form-data',
    'text/plain',
    'application/json; charset=utf-16',
    'application/json; charset=latin1',
    '',
    ';;',
  ),
  fc.string({ unit: 'binary', maxLength: 30 }),
);
const anAccept = fc.oneof(
  hostile(
    'application/json',
    'application/graphql-response+json',
    'text/event-stream',
    'multipart/mixed',
    'multipart/mixed; deferSpec=20220824',
    '*/*',
    'text/html',
    '',
    'application/json;q=0',
  ),
  fc.string({ unit: 'binary', maxLength: 30 }),
);
const aHeaderName = fc.oneof(
  hostile(
    'x-forwarded-for',
    'x-forwarded-host',
    'x-real-ip',
    'x-request-id',
    'traceparent',
    'tracestate',
    'content-encoding',
    'expect',
    'upgrade',
    'if-none-match',
    'range',
    'x-graphql-event-stream-token',
    'sec-fetch-site',
    'sec-websocket-key',
    'connection',
  ),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }),
);
const aHeaderValue = fc.oneof(
  hostile(
    'gzip',
    'br',
    '100-continue',
    '00-00000000000000000000000000000000-0000000000000000-00',
    'websocket',
    'bytes=0-1',
    'x'.repeat(20_000),
    '\u0000',
    'keep-alive, Upgrade',
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
);

/** A caller that sends only what a client must: this gateway's Host, and a credential that passes on it now and then. */
const plainHeaders = fc
  .record({ authorization: fc.constantFrom('Bearer <token:admin>', 'Bearer <jwt:admin>', 'Bearer <token:read>') }, { requiredKeys: [] })
  .map(({ authorization }) => [
    ['Host', '<host>'] as [string, string],
    ...(authorization === undefined ? [] : [['Authorization', authorization] as [string, string]]),
  ]);

/** Every header a caller may get wrong: Host, Origin, Cookie, Authorization and strangers, each there or not. */
const hostileHeaders = fc
  .record(
    {
      host: aHost,
      origin: anOrigin,
      cookie: aCookie,
      authorization: anAuthorization,
      extra: fc.array(fc.tuple(aHeaderName, aHeaderValue), { maxLength: 3 }),
    },
    { requiredKeys: ['host'] },
  )
  .map(({ host, origin, cookie, authorization, extra }) => [
    ['Host', host] as [string, string],
    ...(origin === undefined ? [] : [['Origin', origin] as [string, string]]),
    ...(cookie === undefined ? [] : [['Cookie', cookie] as [string, string]]),
    ...(authorization === undefined ? [] : [['Authorization', authorization] as [string, string]]),
    ...(extra ?? []),
  ]);

/**
 * The headers a door must send (`must`) among others: half of the time a plain caller's, so that
 * the body, the frames and the operation reach past the first guard; half of the time hostile.
 */
function headersWith(must: fc.Arbitrary<[string, string][]>): fc.Arbitrary<[string, string][]> {
  return fc.tuple(fc.oneof(plainHeaders, hostileHeaders), must).map(([[host, ...rest], required]) => [host!, ...required, ...rest]);
}

const PATHS = [
  '/graphql',
  '/graphql',
  '/graphql',
  '/',
  '/health',
  '/ready',
  '/metrics',
  '/index.html',
  '/assets/x.js',
  '/graphql/',
  '//graphql',
  '/graphql%00',
  '/..%2f..%2fetc/passwd',
  '*',
  'http://evil/graphql',
  '/graphiql',
  '/favicon.ico',
];
const aQueryString = fc.oneof(
  { weight: 3, arbitrary: fc.constant('') },
  {
    weight: 3,
    arbitrary: graphqlRequest.map((r) => `?query=${percentEncoded(String(r.query))}&variables=${percentEncoded(JSON.stringify(r.variables ?? {}))}`),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 60 }).map((s) => `?${s}`) },
  {
    weight: 1,
    arbitrary: hostile(
      '?query=%',
      '?query=%ff',
      '?variables=%7B',
      '?a=1&a=2&a=3',
      `?query=${'%7B'.repeat(5000)}`,
      '?query={__typename}&extensions={"persistedQuery":{"sha256Hash":"0"}}',
    ),
  },
);

/** A multipart/form-data body as the GraphQL multipart request spec has it (operations, map, files), made bad at times. */
const aMultipartBody = fc
  .record({ request: graphqlRequest, map: mutatedJson({ 0: ['variables.file'] }), file: fc.string({ unit: 'binary', maxLength: 200 }), cut: fc.boolean() })
  .map(({ request, map, file, cut }) => {
    const body = [
      '--fz\r\nContent-Disposition: form-data; name="operations"\r\n\r\n',
      JSON.stringify(request),
      '\r\n--fz\r\nContent-Disposition: form-data; name="map"\r\n\r\n',
      JSON.stringify(map),
      '\r\n--fz\r\nContent-Disposition: form-data; name="0"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\n',
      file,
      '\r\n--fz--\r\n',
    ].join('');
    return cut ? body.slice(0, body.length >> 1) : body;
  });

const aBody = fc.oneof(
  { weight: 6, arbitrary: graphqlRequest.map((r) => JSON.stringify(r)) },
  { weight: 1, arbitrary: graphqlRequest.map((r) => new URLSearchParams({ query: String(r.query), variables: JSON.stringify(r.variables ?? {}) }).toString()) },
  { weight: 1, arbitrary: aMultipartBody },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 300 }) },
  {
    weight: 1,
    arbitrary: hostile(
      '',
      '{}',
      '[]',
      'null',
      '[{"query":"{__typename}"},{"query":"{ status { seq } }"}]',
      '{"query":"{__typename}","extensions":{"persistedQuery":{"version":1,"sha256Hash":"x"}}}',
    ),
  },
);

const httpInput: fc.Arbitrary<HttpInput> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record(
      {
        method: fc.oneof(
          { weight: 6, arbitrary: hostile('POST', 'GET') },
          { weight: 1, arbitrary: hostile('HEAD', 'OPTIONS', 'PUT', 'DELETE', 'PATCH', 'TRACE', 'get', 'M-SEARCH') },
        ),
        target: fc.tuple(fc.constantFrom(...PATHS), aQueryString).map(([path, query]) => path + query),
        headers: headersWith(
          fc.tuple(aContentType, anAccept).map(
            ([type, accept]) =>
              [
                ['Content-Type', type],
                ['Accept', accept],
              ] as [string, string][],
          ),
        ),
        body: aBody,
        chunked: fc.boolean(),
        lengthOff: fc.oneof({ weight: 8, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: -50, max: 50 }) }),
      },
      { requiredKeys: ['method', 'target', 'headers', 'body'] },
    ),
  },
  {
    weight: 1,
    arbitrary: fc
      .oneof(
        fc.string({ unit: 'binary', maxLength: 200 }),
        mutatedText('POST /graphql HTTP/1.1\r\nHost: <host>\r\nContent-Type: application/json\r\nContent-Length: 27\r\n\r\n{"query":"{ __typename }"}\r\n'),
        hostile(
          'GET /graphql HTTP/1.1\r\nHost: <host>\r\nHost: <host>\r\n\r\n',
          'GET / HTTP/1.0\r\n\r\n',
          'GET /health HTTP/2.0\r\n\r\n',
          'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
        ),
      )
      .map((raw) => ({ method: '', target: '', headers: [], body: '', raw })),
  },
);

/** The bytes of `input` as sent to `target`. */
function httpBytes(target: Target, input: HttpInput): Buffer {
  if (input.raw !== undefined) return Buffer.from(resolve(target, input.raw), 'utf8');
  const body = Buffer.from(input.body, 'utf8');
  const lines = [`${input.method} ${input.target} HTTP/1.1`, ...input.headers.map(([name, value]) => `${name}: ${resolve(target, value)}`)];
  const hasBody = body.length > 0 || !['GET', 'HEAD'].includes(input.method);
  if (input.chunked && hasBody) lines.push('Transfer-Encoding: chunked');
  else if (hasBody) lines.push(`Content-Length: ${Math.max(0, body.length + (input.lengthOff ?? 0))}`);
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'utf8');
  if (!input.chunked || !hasBody) return Buffer.concat([head, body]);
  return Buffer.concat([head, Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);
}

/** Judges an HTTP answer: a 5xx (but /ready's 503, which says it is not ready) or an INTERNAL in the body fails. */
function judgeHttp(answer: RawAnswer, path: string): Verdict {
  const outcome = answer.status ? String(answer.status) : answer.ended;
  if (answer.ended === 'refused') return { ok: false, kind: 'unreachable', outcome, detail: 'connection refused' };
  if (answer.status >= 500 && !(answer.status === 503 && path.startsWith('/ready')))
    return { ok: false, kind: 'http-5xx', outcome, detail: `${answer.status}: ${answer.body.slice(0, 300)}` };
  const internal = INTERNAL.exec(answer.body);
  if (internal) return { ok: false, kind: 'internal', outcome, detail: answer.body.slice(Math.max(0, internal.index - 300), internal.index + 200) };
  return { ok: true, outcome };
}

async function sendHttp(target: Target, input: HttpInput, readMs: number): Promise<Verdict> {
  const answer = await rawExchange(target.port, httpBytes(target, input), readMs, { bodiless: input.method === 'HEAD' });
  return judgeHttp(answer, input.target);
}

const httpDoor: Door<HttpInput> = { name: 'http', input: httpInput, send: (target, input) => sendHttp(target, input, HTTP_READ_MS) };

/** Subscriptions (and queries) asked as Server-Sent Events, by GET or POST, with the headers made bad at times. */
const sseInput: fc.Arbitrary<HttpInput> = fc
  .record({
    op: fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...SUBSCRIPTIONS).map((o) => ({ query: o.query, variables: {} as unknown })) },
      { weight: 1, arbitrary: graphqlRequest.map((r) => ({ query: r.query, variables: r.variables })) },
    ),
    get: fc.boolean(),
    headers: headersWith(
      fc.constantFrom<[string, string][]>(
        [['Accept', 'text/event-stream']],
        [
          ['Accept', 'text/event-stream'],
          ['Content-Type', 'application/json'],
        ],
      ),
    ),
  })
  .map(({ op, get, headers }) =>
    get
      ? {
          method: 'GET',
          target: `/graphql?query=${percentEncoded(String(op.query))}&variables=${percentEncoded(JSON.stringify(op.variables ?? {}))}`,
          headers,
          body: '',
        }
      : { method: 'POST', target: '/graphql', headers: [...headers, ['Content-Type', 'application/json'] as [string, string]], body: JSON.stringify(op) },
  );

const sseDoor: Door<HttpInput> = { name: 'sse', input: sseInput, send: (target, input) => sendHttp(target, input, STREAM_READ_MS) };

/** multipart/mixed answers (incremental delivery, subscriptions) and multipart/form-data bodies (uploads). */
const multipartInput: fc.Arbitrary<HttpInput> = fc.oneof(
  fc.record({
    method: fc.constant('POST'),
    target: fc.constant('/graphql'),
    headers: headersWith(fc.constant<[string, string][]>([['Content-Type', 'multipart/form-data; boundary=fz']])),
    body: aMultipartBody,
  }),
  fc
    .record({
      op: fc.oneof(
        fc.constantFrom(...SUBSCRIPTIONS).map((o) => ({ query: o.query })),
        graphqlRequest,
      ),
      headers: headersWith(fc.constantFrom<[string, string][]>([['Accept', 'multipart/mixed']], [['Accept', 'multipart/mixed; deferSpec=20220824']])),
    })
    .map(({ op, headers }) => ({
      method: 'POST',
      target: '/graphql',
      headers: [...headers, ['Content-Type', 'application/json'] as [string, string]],
      body: JSON.stringify(op),
    })),
);

const multipartDoor: Door<HttpInput> = { name: 'multipart', input: multipartInput, send: (target, input) => sendHttp(target, input, STREAM_READ_MS) };

// ---------------------------------------------------------------------------------------------
// graphql-ws

/** A WebSocket upgrade to `target` with `headers` (Host, Origin, the subprotocol… made bad at times), then `frames` (opcode and text). */
export interface WsInput {
  target: string;
  headers: [string, string][];
  frames: { op: number; text: string; unmasked?: boolean }[];
}

const initFrame = fc
  .record({ type: fc.constant('connection_init'), payload: fc.record({ Authorization: anAuthorization }, { requiredKeys: [] }) })
  .chain((frame) => fc.oneof({ weight: 4, arbitrary: fc.constant(frame as unknown) }, mutatedJson(frame)))
  .map((frame) => ({ op: TEXT, text: JSON.stringify(frame) ?? '' }));
const subscribeFrame = fc
  .record({
    id: fc.oneof({ weight: 4, arbitrary: hostile('1', '2', 'a') }, { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) }),
    type: fc.constant('subscribe'),
    payload: fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...SUBSCRIPTIONS).map((o) => ({ query: o.query }) as Record<string, unknown>) }, graphqlRequest),
  })
  .chain((frame) => fc.oneof({ weight: 3, arbitrary: fc.constant(frame as unknown) }, mutatedJson(frame)))
  .map((frame) => ({ op: TEXT, text: JSON.stringify(frame) ?? '' }));
const otherFrame = fc.oneof(
  hostile(
    '{"type":"ping"}',
    '{"type":"pong"}',
    '{"id":"1","type":"complete"}',
    '{"type":"connection_init"}',
    '{}',
    'null',
    '',
    '{"type":"next","id":"1","payload":{}}',
  ).map((text) => ({ op: TEXT, text })),
  fc.string({ unit: 'binary', maxLength: 100 }).map((text) => ({ op: TEXT, text })),
  fc.string({ maxLength: 50 }).map((text) => ({ op: BINARY, text })),
  fc.record({ op: fc.integer({ min: 0, max: 15 }), text: fc.string({ maxLength: 20 }), unmasked: fc.boolean() }),
  fc.nat({ max: 1_200_000 }).map((n) => ({ op: TEXT, text: `{"type":"connection_init","payload":{"Authorization":"Bearer eyJ${'A'.repeat(n)}.x.y"}}` })),
);

const wsInput: fc.Arbitrary<WsInput> = fc.record({
  target: fc.oneof({ weight: 8, arbitrary: fc.constant('/graphql') }, { weight: 1, arbitrary: fc.constantFrom(...PATHS) }),
  headers: headersWith(
    fc
      .record({
        protocol: fc.oneof(
          { weight: 6, arbitrary: fc.constant('graphql-transport-ws') },
          { weight: 1, arbitrary: hostile('graphql-ws', '', 'graphql-transport-ws, graphql-ws', 'x'.repeat(3000)) },
        ),
        version: fc.oneof({ weight: 8, arbitrary: fc.constant('13') }, { weight: 1, arbitrary: hostile('8', '', '13, 13', '99999999999') }),
        key: fc.oneof({ weight: 8, arbitrary: fc.constant('dGhlIHNhbXBsZSBub25jZQ==') }, { weight: 1, arbitrary: hostile('', 'x', '====') }),
      })
      .map(({ protocol, version, key }) => [
        ['Upgrade', 'websocket'],
        ['Connection', 'Upgrade'],
        ['Sec-WebSocket-Version', version],
        ['Sec-WebSocket-Key', key],
        ['Sec-WebSocket-Protocol', protocol],
      ]),
  ),
  frames: fc
    .tuple(initFrame, fc.array(fc.oneof({ weight: 3, arbitrary: subscribeFrame }, otherFrame), { maxLength: 5 }))
    .map(([init, rest]) => [init, ...rest]),
});

/** Judges what the socket answered: a 5xx on the upgrade, an internal close (1011, graphql-ws's 4500) or an INTERNAL in a message fails. */
function judgeWs(status: number, frames: ServerFrame[], ended: RawAnswer['ended']): Verdict {
  const close = frames.find((f) => f.opcode === CLOSE);
  const outcome = status === 101 ? `101${close ? ` close ${close.closeCode ?? '-'}` : ''}` : status ? String(status) : ended;
  if (ended === 'refused') return { ok: false, kind: 'unreachable', outcome, detail: 'connection refused' };
  if (status >= 500) return { ok: false, kind: 'http-5xx', outcome, detail: `upgrade answered ${status}` };
  if (close && (close.closeCode === 1011 || close.closeCode === 4500))
    return { ok: false, kind: 'ws-internal-close', outcome, detail: `closed ${close.closeCode} ${close.text}` };
  const internal = frames.find((f) => f.opcode === TEXT && INTERNAL.test(f.text));
  if (internal) return { ok: false, kind: 'internal', outcome, detail: internal.text.slice(0, 500) };
  return { ok: true, outcome };
}

/** Upgrades, sends the frames once the server said 101, reads for STREAM_READ_MS, and judges. Never throws. */
function sendWs(target: Target, input: WsInput): Promise<Verdict> {
  const request = Buffer.from(`GET ${input.target} HTTP/1.1\r\n${input.headers.map(([n, v]) => `${n}: ${resolve(target, v)}`).join('\r\n')}\r\n\r\n`, 'utf8');
  return new Promise((done) => {
    let raw = Buffer.alloc(0);
    let head = -1;
    let status = 0;
    let finished = false;
    const socket = tcpConnect({ host: '127.0.0.1', port: target.port });
    const finish = (ended: RawAnswer['ended']) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket.destroy();
      done(judgeWs(status, head === -1 ? [] : serverFrames(raw.subarray(head + 4)), ended));
    };
    const timer = setTimeout(() => finish('cut'), STREAM_READ_MS);
    socket.on('connect', () => socket.write(request));
    socket.on('data', (chunk: Buffer) => {
      if (raw.length < 1024 * 1024) raw = Buffer.concat([raw, chunk]);
      if (head !== -1) return;
      head = raw.indexOf('\r\n\r\n');
      if (head === -1) return;
      status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw.toString('latin1', 0, 20))?.[1] ?? 0);
      if (status !== 101) return finish('closed');
      for (const frame of input.frames) socket.write(clientFrame(frame.op, Buffer.from(frame.text, 'utf8'), !frame.unmasked));
    });
    socket.on('error', (error: NodeJS.ErrnoException) => finish(error.code === 'ECONNREFUSED' ? 'refused' : 'reset'));
    socket.on('close', () => finish('closed'));
  });
}

const wsDoor: Door<WsInput> = { name: 'graphql-ws', input: wsInput, send: sendWs };

// ---------------------------------------------------------------------------------------------
// NATS

/** A message published on `<subjects>.<subject>` (`<controller>` stands for the gateway's), with a body and headers. */
export interface NatsInput {
  subject: string;
  body: string;
  headers?: [string, string][];
  gzip?: boolean;
}

const aToken = fc.oneof(
  { weight: 6, arbitrary: hostile('fz-m1', 'fz-m2', 'fz-b1') },
  { weight: 1, arbitrary: hostile('', '*', '>', 'a b', 'x'.repeat(300), '-', '..', 'Ü', '\u0000', 'UPPER', '0') },
);
/** News as an agent sends it, made bad: the body's fields, the subject's machine or build, or the whole body. */
const newsInput: fc.Arbitrary<NatsInput> = fc.oneof(
  {
    weight: 6,
    arbitrary: validNews.chain(({ subject, body }) =>
      fc.record({
        subject: fc.oneof(
          { weight: 5, arbitrary: fc.constant(`news.${subject}`) },
          { weight: 1, arbitrary: aToken.map((t) => `news.${subject.split('.')[0]}.${t}`) },
        ),
        body: fc.oneof({ weight: 1, arbitrary: fc.constant(body as unknown) }, { weight: 3, arbitrary: mutatedJson(body) }).map((b) => JSON.stringify(b) ?? ''),
      }),
    ),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      subject: fc.constantFrom('news.machine.fz-m1', 'news.build.fz-b1', 'news.machine', 'news.other.fz-m1'),
      body: fc.string({ unit: 'binary', maxLength: 200 }),
    }),
  },
);

/** Publishes and waits for the server's round trip; a subject or body the client refuses to send counts as refused by it. */
async function publish(target: Target, input: NatsInput): Promise<Verdict> {
  const subject = `${target.subjects}.${resolve(target, input.subject)}`;
  try {
    const h = input.headers?.length ? natsHeaders() : undefined;
    for (const [name, value] of input.headers ?? []) h!.append(name, value);
    const body = input.gzip ? gzipSync(Buffer.from(input.body, 'utf8')) : input.body;
    target.nc.publish(subject, body, { headers: h });
    await target.nc.flush();
    await new Promise((r) => setTimeout(r, PUBLISH_PAUSE_MS));
    return { ok: true, outcome: 'published' };
  } catch (error) {
    return { ok: true, outcome: `client refused: ${(error as Error).message.slice(0, 40)}` };
  }
}

const newsDoor: Door<NatsInput> = { name: 'news', input: newsInput, send: publish };

/** A request to a controller verb on `seat.<controller>.<verb>[.<user>]`: valid arguments made bad, a verb or user made up, or a body that is not JSON. */
const verbInput: fc.Arbitrary<NatsInput> = fc.oneof(
  {
    weight: 6,
    arbitrary: validVerbCall.chain(({ verb, args }) =>
      fc.record({
        subject: fc
          .tuple(fc.oneof({ weight: 8, arbitrary: fc.constant(verb) }, { weight: 1, arbitrary: aToken }), fc.oneof(hostile('fuzzer', 'fuzzer', ''), aToken))
          .map(([v, user]) => `seat.<controller>.${v}${user ? `.${user}` : ''}`),
        body: fc.oneof({ weight: 1, arbitrary: fc.constant(args as unknown) }, { weight: 3, arbitrary: mutatedJson(args) }).map((b) => JSON.stringify(b) ?? ''),
      }),
    ),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      subject: fc.constantFrom('seat.<controller>.calls.fuzzer', 'seat.<controller>.status', 'seat.<controller>.push.fuzzer'),
      body: fc.oneof(
        fc.string({ unit: 'binary', maxLength: 200 }),
        fc.nat({ max: 1_100_000 }).map((n) => `{"why":"${'w'.repeat(n)}"}`),
      ),
      headers: fc.array(fc.tuple(hostile('Mesh-Call', 'traceparent', 'Nats-Msg-Id', 'Mesh-Outer-Call'), fc.string({ maxLength: 60 })), { maxLength: 2 }),
    }),
  },
);

/** A verb's subject is answered by the responder: `seat.<controller>.<verb>` or `….<verb>.<user>`, tokens NATS takes. */
const ANSWERED = /^seat\.<controller>\.[^.*>\s]+(\.[^.*>\s]+)?$/;

/** Sends the request and judges the answer: `{"ok":false,"error":{"code":"INTERNAL"}}` fails, and so does no answer on a subject the responder serves. */
async function request(target: Target, input: NatsInput): Promise<Verdict> {
  const subject = `${target.subjects}.${resolve(target, input.subject)}`;
  let h: ReturnType<typeof natsHeaders> | undefined;
  try {
    h = input.headers?.length ? natsHeaders() : undefined;
    for (const [name, value] of input.headers ?? []) h!.append(name, value);
  } catch (error) {
    return { ok: true, outcome: `client refused: ${(error as Error).message.slice(0, 40)}` };
  }
  let reply: string;
  try {
    reply = (await target.nc.request(subject, input.body, { timeout: ANSWER_WAIT_MS, headers: h })).string();
  } catch (error) {
    const message = (error as Error).message;
    const served = ANSWERED.test(input.subject) && !input.subject.includes('\u0000');
    if (served && /timeout|no responders|503/i.test(message)) return { ok: false, kind: 'unanswered', outcome: 'no answer', detail: message };
    return { ok: true, outcome: `client: ${message.slice(0, 30)}` };
  }
  let code = 'ok';
  try {
    const answer = JSON.parse(reply) as { ok?: boolean; error?: { code?: string } };
    code = answer.ok ? 'ok' : (answer.error?.code ?? 'no code');
  } catch {
    code = 'not JSON';
  }
  if (code === 'INTERNAL') return { ok: false, kind: 'internal', outcome: code, detail: reply.slice(0, 500) };
  return { ok: true, outcome: code };
}

const verbDoor: Door<NatsInput> = { name: 'verbs', input: verbInput, send: request };

/** Compositions on `<subjects>.status` from someone who is not the serving replica (issue 34, item 4), then a read of the status over HTTP. */
const statusInput: fc.Arbitrary<NatsInput> = fc.oneof(
  {
    weight: 4,
    arbitrary: validComposition.chain((composition) =>
      fc.record({ subject: fc.constant('status'), body: mutatedJson(composition).map((b) => JSON.stringify(b) ?? '') }),
    ),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      subject: fc.constant('status'),
      body: fc.oneof(fc.string({ unit: 'binary', maxLength: 100 }), hostile('{"seq":9007199254740992,"machines":[]}', '{"seq":-1}', '{"seq":1e400}')),
      headers: fc.array(
        fc.tuple(
          hostile('Mesh-Status-Seq', 'Mesh-Status-Part', 'Content-Encoding', 'Mesh-Status-Kind'),
          hostile('1/2', '0/0', '9999999/1', 'gzip', '-1', 'snapshot', '1'),
        ),
        {
          maxLength: 3,
        },
      ),
      gzip: fc.boolean(),
    }),
  },
);

/** What the dashboard reads of the status after a composition: every instant in it is serialized too. */
const STATUS_READ = '{ status { seq composedAt heardUntil trigger machines { name state lastHeardAt } seats { name held } plans { id state openedAt } } }';

async function publishStatus(target: Target, input: NatsInput): Promise<Verdict> {
  const published = await publish(target, input);
  if (!published.ok) return published;
  const read = Buffer.from(JSON.stringify({ query: STATUS_READ }));
  const answer = await rawExchange(
    target.port,
    Buffer.concat([
      Buffer.from(
        `POST /graphql HTTP/1.1\r\nHost: 127.0.0.1:${target.port}\r\nContent-Type: application/json\r\nAuthorization: Bearer ${target.credentials['token:read']}\r\nContent-Length: ${read.length}\r\n\r\n`,
      ),
      read,
    ]),
    ANSWER_WAIT_MS,
  );
  const verdict = judgeHttp(answer, '/graphql');
  return verdict.ok ? { ok: true, outcome: `published, read ${verdict.outcome}` } : verdict;
}

const statusDoor: Door<NatsInput> = { name: 'status', input: statusInput, send: publishStatus };

/** Every door, in the order the progress lines show them. */
export const DOORS: Door<any>[] = [httpDoor, sseDoor, multipartDoor, wsDoor, newsDoor, verbDoor, statusDoor];

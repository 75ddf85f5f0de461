import { connect as connectTcp } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { type ChildGateway, spawnGateway } from '../fixtures/child.js';
import { aTokensFile, type TestEnv, type TokenFixture, testEnv } from '../fixtures/services.js';

// Issue 34, finding 1: one WebSocket upgrade with a `Host` that is no URL's host (a port over
// 65535, an unclosed IPv6 bracket) and any `Origin` threw ERR_INVALID_URL inside ws's verifyClient,
// which nothing caught: the gateway exited. Every such request is now a refusal, the last-resort
// handler (`mesh_uncaught_total`) is never reached, and the gateway answers /health afterwards.

const READER: TokenFixture = { name: 'reader', scopes: ['read'], token: 'token-of-reader-uncaught' };

let env: TestEnv;
let tokens: ReturnType<typeof aTokensFile>;
let open: ChildGateway;
let gated: ChildGateway;

beforeAll(async () => {
  env = await testEnv('uncaught');
  tokens = aTokensFile([READER]);
  [open, gated] = await Promise.all([spawnGateway(env.env), spawnGateway({ ...env.env, MESH_TOKENS_FILE: tokens.path })]);
}, 90_000);
afterAll(async () => {
  await Promise.all([open?.kill(), gated?.kill()]);
  tokens?.remove();
  await env?.cleanup();
});

/**
 * Sends `head` (a request's lines, without the blank line) on a TCP connection of its own: the
 * status line answered, or `closed` when the connection ends without one.
 */
function rawRequest(url: string, head: string[]): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connectTcp(Number(port), hostname);
    let answer = '';
    const done = () => {
      socket.destroy();
      resolve(answer.split('\r\n')[0] || 'closed');
    };
    socket.setTimeout(5_000, done);
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1');
      if (answer.includes('\r\n')) done();
    });
    socket.once('close', done);
    socket.once('error', done);
    socket.write(`${head.join('\r\n')}\r\n\r\n`);
  });
}

const upgradeHead = (headers: string[]) => [
  'GET /graphql HTTP/1.1',
  'Connection: Upgrade',
  'Upgrade: websocket',
  'Sec-WebSocket-Version: 13',
  'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
  'Sec-WebSocket-Protocol: graphql-transport-ws',
  ...headers,
];

/** Hosts no URL parser takes and Origins beside them: each once through the upgrade, once as a plain GET. */
const HOSTS = ['localhost:99999', '[::1', '[::1]:99999', 'localhost:-1', '%', 'a b', '127.0.0.1:1:2', ''];
const ORIGINS = ['http://localhost:5173', 'https://evil.example', 'null', 'http://[::1', 'http://localhost:99999'];

async function uncaughtOf(gw: ChildGateway, authorization?: string): Promise<number> {
  const text = await (await fetch(gw.url.replace('/graphql', '/metrics'), { headers: authorization ? { authorization } : {} })).text();
  const lines = text.split('\n').filter((l) => l.startsWith('mesh_uncaught_total'));
  expect(lines.length).toBeGreaterThan(0);
  return lines.reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}

describe('a malformed Host or Origin is refused, never the end of the process', () => {
  for (const [name, gw, authorization] of [
    ['an open gateway', () => open, undefined],
    ['a token-gated gateway', () => gated, `Bearer ${READER.token}`],
  ] as const) {
    test(`${name} refuses every upgrade and request with such a Host and still answers /health`, async () => {
      const child = gw();
      for (const host of HOSTS)
        for (const origin of ORIGINS) {
          const answer = await rawRequest(
            child.url,
            upgradeHead([`Host: ${host}`, `Origin: ${origin}`, ...(authorization ? [`Authorization: ${authorization}`] : [])]),
          );
          // Refused (4xx), or let in when the Origin is the gateway's own by its Host's words: never a dead connection.
          expect(answer, `Host ${host}, Origin ${origin}`).toMatch(/^HTTP\/1\.1 (101|4\d\d)/);
          const plain = await rawRequest(child.url, ['GET /health HTTP/1.1', `Host: ${host}`, `Origin: ${origin}`]);
          expect(plain, `GET /health, Host ${host}`).toMatch(/^HTTP\/1\.1 (200|4\d\d)/);
        }
      expect(child.child.exitCode).toBeNull();
      expect((await fetch(child.url.replace('/graphql', '/health'))).status).toBe(200);
      expect(await uncaughtOf(child, authorization)).toBe(0);
    }, 60_000);
  }
});

/** Frames no client should send, each on a socket of its own after (or instead of) connection_init. */
const FRAMES: (string | Buffer)[] = [
  'not json',
  Buffer.from([0xff, 0xfe, 0x00]),
  '{"type":"connection_init","payload":[]}',
  '{"type":"connection_init","payload":"Bearer x"}',
  '{"type":"connection_init","payload":{"Authorization":{"toString":1}}}',
  `{"type":"connection_init","payload":{"Authorization":"Bearer ${'a.b.'.repeat(5_000)}c"}}`,
  '{"type":"subscribe","id":"1","payload":{"query":"{ seats { name } }"}}',
  '{"type":"connection_init"}\n',
  '{"type":"ping","payload":1e999}',
  '{"type":"subscribe","id":null,"payload":null}',
];

/** Sends `frames` on a new socket: the close code it ends with (0 when it is still open after 2 s). */
function closeCodeAfter(url: string, authorization: string | undefined, frames: (string | Buffer)[]): Promise<number> {
  return new Promise((resolve) => {
    const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
    const timer = setTimeout(() => {
      socket.terminate();
      resolve(0);
    }, 2_000);
    socket.once('open', () => {
      if (authorization) socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: authorization } }));
      for (const frame of frames) socket.send(frame);
    });
    socket.once('close', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
    socket.once('error', () => undefined);
  });
}

test('malformed graphql-ws frames close their socket with a code, never the process', async () => {
  // Every frame on each gateway at once, each on a socket of its own: a frame left open waits out its 2 s.
  const sent = FRAMES.flatMap((frame) =>
    (
      [
        [open, undefined],
        [gated, `Bearer ${READER.token}`],
      ] as const
    ).map(async ([gw, authorization]) => ({ frame, code: await closeCodeAfter(gw.url, authorization, [frame]) })),
  );
  for (const { frame, code } of await Promise.all(sent)) {
    // 0: a frame the protocol ignores left the socket open; anything else is a close code, 4xxx or 1xxx.
    expect(code === 0 || code >= 1000, `${String(frame).slice(0, 60)} → ${code}`).toBe(true);
    expect(code, `${String(frame).slice(0, 60)} must not be an internal error`).not.toBe(4500);
  }
  for (const [gw, authorization] of [
    [open, undefined],
    [gated, `Bearer ${READER.token}`],
  ] as const) {
    expect(gw.child.exitCode).toBeNull();
    expect((await fetch(gw.url.replace('/graphql', '/health'))).status).toBe(200);
    expect(await uncaughtOf(gw, authorization)).toBe(0);
  }
}, 90_000);

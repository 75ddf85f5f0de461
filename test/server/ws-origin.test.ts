import { renameSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { hashToken } from '../../src/services/access/token-hash.js';
import { useGateway } from '../fixtures/gateway.js';
import { aTokensFile, startTestGateway, type TestGateway, type TokenFixture } from '../fixtures/services.js';

// Issue 20, finding 3 (a page of another site opening the gateway's WebSocket) and finding 6 (an
// SSE stream outliving its token).

const LISTED = 'https://ops.example.com';
const FOREIGN = 'https://evil.example';
const WALL: TokenFixture = { name: 'wall', scopes: ['read'], token: 'token-of-wall-origin' };
const KEEPER: TokenFixture = { name: 'keeper', scopes: ['read'], token: 'token-of-keeper-origin' };

const { gw: open, env } = useGateway('origin');
let gated: TestGateway;
let tokens: ReturnType<typeof aTokensFile>;

beforeAll(async () => {
  tokens = aTokensFile([WALL, KEEPER]);
  gated = await startTestGateway({ ...env.env, MESH_TOKENS_FILE: tokens.path, MESH_CORS_ORIGINS: LISTED });
}, 60_000);
afterAll(async () => {
  await gated?.stop();
  tokens?.remove();
});

/**
 * Opens a graphql-ws socket with `origin` (as a browser sets it) and sends connection_init with
 * `token`: 'ack' when acknowledged, else the HTTP status its upgrade was refused with.
 */
function upgrade(url: string, origin: string | undefined, token?: string): Promise<'ack' | number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws', { headers: origin ? { origin } : {} });
    socket.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
    });
    socket.once('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: token ? { Authorization: `Bearer ${token}` } : {} })));
    socket.on('message', (data) => {
      if (JSON.parse(String(data)).type === 'connection_ack') {
        resolve('ack');
        socket.close();
      }
    });
    socket.once('close', (code) => reject(new Error(`closed ${code} before an answer`)));
    socket.once('error', (error) => {
      if (!String(error.message).includes('Unexpected server response')) reject(error);
    });
  });
}

const ownOrigin = (gw: TestGateway) => new URL(gw.url).origin;

describe('the Origin of a WebSocket upgrade', () => {
  test('a page of another site is refused 403 on an open gateway, where it used to act as local', async () => {
    expect(await upgrade(open.url, FOREIGN)).toBe(403);
    expect(await upgrade(open.url, 'null')).toBe(403);
  });

  test('the gateway’s own origin, a loopback page, and a client without Origin are served on an open gateway', async () => {
    expect(await upgrade(open.url, ownOrigin(open))).toBe('ack');
    expect(await upgrade(open.url, 'http://localhost:5173')).toBe('ack');
    expect(await upgrade(open.url, undefined)).toBe('ack');
  });

  test('on a token-gated gateway a foreign or unlisted loopback origin is refused even with a good token; its own and a listed one are served', async () => {
    expect(await upgrade(gated.url, FOREIGN, WALL.token)).toBe(403);
    expect(await upgrade(gated.url, 'http://127.0.0.1:1', WALL.token)).toBe(403);
    expect(await upgrade(gated.url, LISTED, WALL.token)).toBe('ack');
    expect(await upgrade(gated.url, ownOrigin(gated), WALL.token)).toBe('ack');
  });
});

/** Replaces the tokens file as an editor does: a new file renamed over the old one. */
function replaceTokens(entries: TokenFixture[]) {
  writeFileSync(`${tokens.path}.tmp`, JSON.stringify({ tokens: entries.map((t) => ({ name: t.name, scopes: t.scopes, sha256: hashToken(t.token) })) }));
  renameSync(`${tokens.path}.tmp`, tokens.path);
}

/** An SSE subscription as `token`: resolves `ended` when the server ends the stream; counts its events. */
async function sse(token: string) {
  const stream = { events: 0, ended: undefined as Promise<void> | undefined };
  const abort = new AbortController();
  const response = await fetch(gated.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: 'subscription { ticks(count: 100, everyMs: 1000) }' }),
    signal: abort.signal,
  });
  expect(response.status).toBe(200);
  stream.ended = (async () => {
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) if (new TextDecoder().decode(chunk).includes('data:')) stream.events++;
    } catch {
      // The connection cut: ended too.
    }
  })();
  return { stream, abort };
}

test('an SSE stream is closed when its token is revoked; another token’s stream goes on', async () => {
  const revoked = await sse(WALL.token);
  const kept = await sse(KEEPER.token);
  await expect.poll(() => revoked.stream.events, { timeout: 10_000 }).toBeGreaterThan(0);
  replaceTokens([KEEPER]);
  // Its 100 ticks would last 100 s: it ends when the tokens file is re-read (polled every second).
  const endedEarly = await Promise.race([revoked.stream.ended!.then(() => true), new Promise((r) => setTimeout(() => r(false), 20_000))]);
  expect(endedEarly).toBe(true);
  expect(revoked.stream.events).toBeLessThan(100);
  const seen = kept.stream.events;
  await expect.poll(() => kept.stream.events, { timeout: 10_000 }).toBeGreaterThan(seen);
  kept.abort.abort();
}, 45_000);

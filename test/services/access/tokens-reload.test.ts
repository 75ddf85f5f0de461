import { renameSync, writeFileSync } from 'node:fs';
import { type Client, createClient } from 'graphql-ws';
import { afterAll, beforeAll, expect, test } from 'vitest';
import WebSocket from 'ws';
import { hashToken } from '../../../src/services/access/token-hash.js';
import { TOKENS_POLL_MS } from '../../../src/services/access/tokens.js';
import { useGateway } from '../../fixtures/gateway.js';
import { eventually } from '../../fixtures/live.js';
import { type LogLine, logInto } from '../../fixtures/log.js';
import { aTokensFile, type TokenFixture } from '../../fixtures/services.js';

// Tokens are re-read when MESH_TOKENS_FILE changes; a revoked token's sockets close 4403.

const A: TokenFixture = { name: 'wall-a', scopes: ['read'], token: 'token-a-for-reload' };
const B: TokenFixture = { name: 'wall-b', scopes: ['read'], token: 'token-b-for-reload' };
const C: TokenFixture = { name: 'operator-c', scopes: ['read', 'act'], token: 'token-c-for-reload' };

const logged: LogLine[] = [];
let tokens: ReturnType<typeof aTokensFile>;
const clients: Client[] = [];

/** Replaces the tokens file as an editor does: a new file renamed over the old one. */
function replaceTokens(entries: TokenFixture[] | string) {
  const text =
    typeof entries === 'string' ? entries : JSON.stringify({ tokens: entries.map((t) => ({ name: t.name, scopes: t.scopes, sha256: hashToken(t.token) })) });
  writeFileSync(`${tokens.path}.tmp`, text);
  renameSync(`${tokens.path}.tmp`, tokens.path);
}

const statusOf = async (token: string) =>
  (
    await fetch(gw.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: '{ seats { name } }' }),
    })
  ).status;

/** A long subscription as `token`: its ticks, and the close code of its socket once closed. */
async function subscribe(token: string) {
  const socket = { closedWith: undefined as number | undefined, ticks: 0 };
  const client = createClient({
    url: gw.url.replace(/^http/, 'ws'),
    webSocketImpl: WebSocket,
    connectionParams: { Authorization: `Bearer ${token}` },
    retryAttempts: 0,
    lazy: false,
    onNonLazyError: () => undefined,
    on: { closed: (event) => (socket.closedWith = (event as { code: number }).code) },
  });
  clients.push(client);
  client.subscribe(
    { query: 'subscription { ticks(count: 100, everyMs: 200) }' },
    { next: () => socket.ticks++, error: () => undefined, complete: () => undefined },
  );
  await eventually(() => socket.ticks > 0, `a tick for ${token}`);
  return socket;
}

// The tokens file is this file's own, replaced by the tests: made before the gateway, removed after it.
beforeAll(() => {
  tokens = aTokensFile([A, B, C]);
});
afterAll(() => tokens?.remove());
// A gateway of our own, so its log shows each reading of the tokens file.
const { gw } = useGateway('reload', { env: () => ({ MESH_TOKENS_FILE: tokens.path }), logger: () => logInto(logged, 'info') });
afterAll(async () => {
  for (const client of clients) await client.dispose();
});

test('a token removed from the tokens file loses its sockets (4403) and its HTTP requests (401); other tokens go on', async () => {
  const a = await subscribe(A.token);
  const b = await subscribe(B.token);
  expect(await statusOf(A.token)).toBe(200);

  replaceTokens([B, C]);
  await eventually(() => a.closedWith !== undefined, 'the socket of A closed', 5_000);
  expect(a.closedWith).toBe(4403);
  expect(await statusOf(A.token)).toBe(401);
  expect(await statusOf(B.token)).toBe(200);
  const ticks = b.ticks;
  await eventually(() => b.ticks > ticks, 'B still ticking');
  expect(b.closedWith).toBeUndefined();
});

test('a token whose scopes shrank loses its sockets (4403) and keeps the scopes it still has', async () => {
  const c = await subscribe(C.token);
  const b = await subscribe(B.token);
  replaceTokens([B, { ...C, scopes: ['read'] }]);
  await eventually(() => c.closedWith !== undefined, 'the socket of C closed', 5_000);
  expect(c.closedWith).toBe(4403);
  expect(await statusOf(C.token)).toBe(200);
  expect(b.closedWith).toBeUndefined();
});

test('a tokens file that no longer parses keeps the tokens last read', async () => {
  const b = await subscribe(B.token);
  const refusals = () => logged.filter((line) => line.msg === 'the tokens file does not parse: keeping the tokens last read').length;
  const refusedBefore = refusals();
  replaceTokens('{"tokens": [ not json');
  await eventually(() => refusals() > refusedBefore, 'the broken tokens file read and refused', TOKENS_POLL_MS * 5);
  expect(await statusOf(B.token)).toBe(200);
  expect(await statusOf(A.token)).toBe(401);
  expect(b.closedWith).toBeUndefined();

  // A valid file afterwards is read again: A is back.
  replaceTokens([A, B]);
  await eventually(async () => (await statusOf(A.token)) === 200, 'A accepted again', 5_000);
});

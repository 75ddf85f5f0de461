import { renameSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { hashToken } from '../../src/services/access/token-hash.js';
import { useGateway } from '../fixtures/gateway.js';
import { aJwksFile, aJwtOf, aSigningKey, type SigningKey } from '../fixtures/jwks.js';
import { eventually } from '../fixtures/live.js';
import { aTokensFile, type TokenFixture } from '../fixtures/services.js';
import { RawWsClient } from '../fixtures/ws-client.js';

// Issue 34, finding 6: SSE had none of the socket's limits. One `read` token opened 300 SSE
// streams and every one was served; an SSE stream whose JWT expired at +4 s still streamed at
// 12 s. Streams are now held to the sockets' rules (src/server/live-doors.ts), any response that
// streams (SSE or `multipart/mixed`) alike. graphql-yoga 5 serves subscriptions over SSE only: a
// `multipart/mixed` subscription is answered 406 at once, so it streams nothing and holds nothing.

const WALL: TokenFixture = { name: 'wall', scopes: ['read'], token: 'token-of-wall-streams' };
const OPS: TokenFixture = { name: 'ops', scopes: ['read'], token: 'token-of-ops-streams' };
const KIOSK: TokenFixture = { name: 'kiosk', scopes: ['read'], token: 'token-of-kiosk-streams' };
const KEEPER: TokenFixture = { name: 'keeper', scopes: ['read'], token: 'token-of-keeper-streams' };
const PER_CALLER = 2;
const PER_ADDRESS = 4;

let key: SigningKey;
let jwks: ReturnType<typeof aJwksFile>;
let tokens: ReturnType<typeof aTokensFile>;
beforeAll(async () => {
  key = await aSigningKey('streams');
  jwks = aJwksFile([key]);
  tokens = aTokensFile([WALL, OPS, KIOSK, KEEPER]);
});
afterAll(() => {
  jwks?.remove();
  tokens?.remove();
});
const { gw } = useGateway('streams', {
  env: () => ({
    ...jwks.env,
    MESH_TOKENS_FILE: tokens.path,
    MESH_WS_SOCKETS_PER_CALLER: String(PER_CALLER),
    MESH_WS_SOCKETS_PER_ADDRESS: String(PER_ADDRESS),
  }),
});

const TICKS = 'subscription { ticks(count: 100000, everyMs: 50) }';
type Kind = 'sse' | 'multipart';
const ACCEPT: Record<Kind, string> = { sse: 'text/event-stream', multipart: 'multipart/mixed' };

interface Stream {
  status: number;
  /** Bytes received so far. */
  received(): number;
  /** Resolves with the instant the stream ended (closed by the server, cut, or done). */
  ended: Promise<number>;
  cancel(): Promise<void>;
}
const opened: Stream[] = [];
afterAll(async () => {
  await Promise.all(opened.map((s) => s.cancel()));
});

/** Opens a subscription over SSE or multipart/mixed with `authorization`, reading it as it comes. */
async function openStream(kind: Kind, authorization: string, query = TICKS): Promise<Stream> {
  const controller = new AbortController();
  const response = await fetch(gw.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT[kind], authorization },
    body: JSON.stringify({ query }),
    signal: controller.signal,
  });
  let bytes = 0;
  const reader = response.body!.getReader();
  const ended = (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        bytes += value.length;
      }
    } catch {
      // cut
    }
    return Date.now();
  })();
  const stream: Stream = {
    status: response.status,
    received: () => bytes,
    ended,
    async cancel() {
      controller.abort();
      await ended;
    },
  };
  opened.push(stream);
  if (response.status === 200) await eventually(() => bytes > 0, `the first ${kind} event`);
  return stream;
}

/** Whether `stream` is still streaming: it received more within `ms`. */
async function stillStreaming(stream: Stream, ms = 600): Promise<boolean> {
  const before = stream.received();
  const ended = await Promise.race([stream.ended.then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), ms))]);
  return !ended && stream.received() > before;
}

const closeAll = async () => {
  await Promise.all(opened.splice(0).map((s) => s.cancel()));
  // The server hears each cancel as its response closes: a caller's count is back at zero once a stream opens again.
  await eventually(async () => {
    const probe = await openStream('sse', `Bearer ${WALL.token}`, 'subscription { ticks(count: 1, everyMs: 10) }');
    await probe.ended;
    opened.splice(opened.indexOf(probe), 1);
    return probe.status === 200;
  }, 'the counts back at zero');
};

describe('the caps of the sockets hold streams too', () => {
  test('past MESH_WS_SOCKETS_PER_CALLER a caller’s next stream is refused 429, and so is its next socket', async () => {
    const first = await openStream('sse', `Bearer ${WALL.token}`);
    const second = await openStream('sse', `Bearer ${WALL.token}`);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect((await openStream('sse', `Bearer ${WALL.token}`)).status).toBe(429);
    const refused = await fetch(gw.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${WALL.token}` },
      body: JSON.stringify({ query: TICKS }),
    });
    expect(await refused.json()).toEqual({
      errors: [{ message: `wall has ${PER_CALLER} sockets and streams open; at most ${PER_CALLER}`, extensions: { code: 'TOO_MANY_REQUESTS' } }],
    });
    // A caller's streams and sockets count together.
    await expect(RawWsClient.connect(gw.url, `Bearer ${WALL.token}`)).rejects.toMatchObject({ code: 4429 });
    // Another caller is served; the two streams go on.
    const other = await openStream('sse', `Bearer ${OPS.token}`);
    expect(other.status).toBe(200);
    expect(await stillStreaming(first)).toBe(true);
    expect(await stillStreaming(second)).toBe(true);
    await closeAll();
  });

  test('past MESH_WS_SOCKETS_PER_ADDRESS a stream from that address is refused 429', async () => {
    for (const caller of [WALL, WALL, OPS, OPS]) expect((await openStream('sse', `Bearer ${caller.token}`)).status).toBe(200);
    // kiosk has no stream yet: the address is what is full.
    expect((await openStream('sse', `Bearer ${KIOSK.token}`)).status).toBe(429);
    await closeAll();
  });
});

describe('a stream ends as a socket closes', () => {
  test('at its JWT’s expiry', async () => {
    const expiresInS = 3;
    const stream = await openStream('sse', `Bearer ${await aJwtOf(key, { sub: 'expiring' }, { expiresInS })}`);
    const started = Date.now();
    expect(stream.status).toBe(200);
    const endedAt = await Promise.race([stream.ended, new Promise<number>((resolve) => setTimeout(() => resolve(Number.NaN), 8_000))]);
    // Ended at the expiry (the token's `exp` is in whole seconds), not left streaming.
    expect(endedAt - started).toBeLessThan(expiresInS * 1000 + 1_500);
  }, 20_000);

  test('when its token is revoked; another token’s streams go on', async () => {
    const [sse, second, other] = [
      await openStream('sse', `Bearer ${KEEPER.token}`),
      await openStream('sse', `Bearer ${KEEPER.token}`),
      await openStream('sse', `Bearer ${OPS.token}`),
    ];
    writeFileSync(
      `${tokens.path}.tmp`,
      JSON.stringify({ tokens: [WALL, OPS, KIOSK].map((t) => ({ name: t.name, scopes: t.scopes, sha256: hashToken(t.token) })) }),
    );
    renameSync(`${tokens.path}.tmp`, tokens.path);
    for (const stream of [sse, second]) {
      const endedAt = await Promise.race([stream.ended, new Promise<number>((resolve) => setTimeout(() => resolve(Number.NaN), 8_000))]);
      expect(endedAt).not.toBeNaN();
    }
    expect(await stillStreaming(other)).toBe(true);
    await closeAll();
  }, 20_000);
});

test('a multipart/mixed subscription is answered at once (406, graphql-yoga serves subscriptions over SSE): no stream to hold', async () => {
  const multipart = await openStream('multipart', `Bearer ${WALL.token}`);
  expect(multipart.status).toBe(406);
  await multipart.ended;
});

// It drains the gateway: the last test of the file.
test('a draining gateway ends its subscription streams at once, counted only while they streamed', async () => {
  const sse = await openStream('sse', `Bearer ${WALL.token}`);
  const other = await openStream('sse', `Bearer ${OPS.token}`);
  expect(gw.http.drain.inFlight()).toBe(2);
  const began = Date.now();
  gw.http.drain.begin();
  await Promise.race([gw.http.drain.idle(), new Promise((_, reject) => setTimeout(() => reject(new Error('the drain still waits on the streams')), 3_000))]);
  expect(Date.now() - began).toBeLessThan(3_000);
  await Promise.all([sse.ended, other.ended]);
  expect(gw.http.drain.inFlight()).toBe(0);
});

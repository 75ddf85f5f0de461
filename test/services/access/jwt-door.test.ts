import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { type JwtVerifier, startJwtVerifier } from '../../../src/services/access/jwt.js';
import { BEARER_MAX_BYTES, JWT_VERDICTS_KEPT, loadAccess } from '../../../src/services/access/tokens.js';
import { useGateway } from '../../fixtures/gateway.js';
import { aJwksFile, aJwtOf, aSigningKey, JWT_AUDIENCE, JWT_ISSUER, type SigningKey } from '../../fixtures/jwks.js';
import { eventually } from '../../fixtures/live.js';

// Issue 34, finding 5: every bearer shaped like a JWT, of any length, was verified and its verdict
// kept, refusals included, 10,000 of them, oldest out first: junk pushed out good verdicts (a
// socket whose verdict was pushed out was then closed as revoked at the next key change) and held
// memory. Now a bearer over 8 KiB is refused unread, only good verdicts are kept, and a good one
// missing from the cache is verified again.

let key: SigningKey;
let jwks: ReturnType<typeof aJwksFile>;
beforeAll(async () => {
  key = await aSigningKey('door');
  jwks = aJwksFile([key]);
});
afterAll(() => jwks?.remove());
const { gw } = useGateway('jwtdoor', { env: () => jwks.env });

const SETTINGS = { jwksUrl: undefined, issuer: JWT_ISSUER, audience: JWT_AUDIENCE, scopesClaim: 'scope' };
const silent = pino({ level: 'silent' });

/** The gateway's JWT verifier over the fixture's JWKS, counting the tokens it is asked to verify. */
function aCountingVerifier(): JwtVerifier & { verified: number } {
  const real = startJwtVerifier({ ...SETTINGS, jwksFile: jwks.path }, silent, 50);
  const counting = {
    verified: 0,
    verify: (token: string) => {
      counting.verified++;
      return real.verify(token);
    },
    onKeysChanged: real.onKeysChanged,
    stop: real.stop,
  };
  return counting;
}

/** A bearer shaped like a JWT (three base64url parts) that no key signed, `bytes` long. */
const aJunkJwt = (bytes: number, salt = 0) => `eyJhbGciOiJFUzI1NiJ9.${`${salt}x`.padEnd(bytes - 46, 'A')}.c2lnbmF0dXJlLW9mLW5vYm9keQ`;

async function post(authorization: string) {
  const response = await fetch(gw.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', authorization },
    body: JSON.stringify({ query: '{ seats { name } }' }),
  });
  return { status: response.status, body: (await response.json()) as { errors?: { message: string }[] } };
}

/** Opens a graphql-ws socket whose connection_init carries `authorization`: acknowledged, or closed with a code and reason. */
function openSocket(
  authorization: string,
): Promise<{ socket: WebSocket; closed: Promise<{ code: number; reason: string }> } | { code: number; reason: string }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(gw.url.replace(/^http/, 'ws'), 'graphql-transport-ws');
    const closed = new Promise<{ code: number; reason: string }>((done) => socket.once('close', (code, reason) => done({ code, reason: String(reason) })));
    socket.once('error', reject);
    socket.once('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: authorization } })));
    socket.once('message', (data) => {
      if (JSON.parse(String(data)).type === 'connection_ack') resolve({ socket, closed });
    });
    void closed.then(resolve);
  });
}

describe('a bearer over 8 KiB', () => {
  test('is refused unread: never verified, its reason naming the limit', async () => {
    const verifier = aCountingVerifier();
    const access = loadAccess(undefined, verifier);
    const huge = `Bearer ${aJunkJwt(BEARER_MAX_BYTES + 1)}`;
    expect(access.admit(huge)).toBeUndefined();
    expect(() => access.callerFor(huge)).toThrow(`the bearer token is longer than ${BEARER_MAX_BYTES} bytes`);
    await expect(access.callerNow(`Bearer ${aJunkJwt(1 << 20)}`)).rejects.toThrow(/longer than 8192 bytes/);
    expect(verifier.verified).toBe(0);
    verifier.stop();
  });

  test('over HTTP is answered 401, and a megabyte’s bearer in a socket’s connection_init is closed 4403, both naming the limit', async () => {
    const answered = await post(`Bearer ${aJunkJwt(BEARER_MAX_BYTES + 100)}`);
    expect(answered.status).toBe(401);
    expect(answered.body.errors?.[0]?.message).toBe(`the bearer token is longer than ${BEARER_MAX_BYTES} bytes`);
    const refused = await openSocket(`Bearer ${aJunkJwt((1 << 20) - 1024)}`);
    expect(refused).toEqual({ code: 4403, reason: `Forbidden: the bearer token is longer than ${BEARER_MAX_BYTES} bytes` });
  });
});

describe('verdicts kept', () => {
  test('a refusal is not kept: junk is verified each time it comes and never pushes a good verdict out', async () => {
    const verifier = aCountingVerifier();
    const access = loadAccess(undefined, verifier);
    const good = `Bearer ${await aJwtOf(key)}`;
    expect(await access.admit(good)).toBeUndefined();
    for (let i = 0; i < JWT_VERDICTS_KEPT + 10; i++) expect(await access.admit(`Bearer ${aJunkJwt(200, i)}`)).toMatch(/not a valid JWT|signature/);
    expect(access.callerFor(good).name).toBe('ada@example.test');
    // Judged again, not answered from a kept refusal.
    const before = verifier.verified;
    await access.admit(`Bearer ${aJunkJwt(200, 1)}`);
    expect(verifier.verified).toBe(before + 1);
    verifier.stop();
  }, 60_000);

  test('a good token whose verdict is no longer kept (the keys changed) is verified again, never taken for revoked', async () => {
    const verifier = aCountingVerifier();
    const access = loadAccess(undefined, verifier);
    const good = `Bearer ${await aJwtOf(key)}`;
    await access.admit(good);
    const reloaded = new Promise<void>((resolve) => access.onReload(resolve));
    jwks.write([key, await aSigningKey('another')]);
    await reloaded;
    await expect(access.callerNow(good)).resolves.toMatchObject({ name: 'ada@example.test' });
    verifier.stop();
  });

  test('a socket signed in with a good JWT stays open across a key change after 10,000 junk bearers were refused', async () => {
    const opened = await openSocket(`Bearer ${await aJwtOf(key)}`);
    if (!('socket' in opened)) throw new Error(`refused: ${opened.reason}`);
    for (let sent = 0; sent < JWT_VERDICTS_KEPT + 100; sent += 500) {
      const answers = await Promise.all(Array.from({ length: 500 }, (_, i) => post(`Bearer ${aJunkJwt(120, sent + i)}`)));
      expect(answers.every((a) => a.status === 401)).toBe(true);
    }
    // The key change re-judges every socket: once the new key is taken, the socket has been judged again.
    const rotatedIn = await aSigningKey('rotated-in');
    jwks.write([key, rotatedIn]);
    const byNewKey = `Bearer ${await aJwtOf(rotatedIn)}`;
    await eventually(async () => (await post(byNewKey)).status === 200, 'the rotated-in key taken', 15_000);
    const outcome = await Promise.race([opened.closed, new Promise<'open'>((resolve) => setTimeout(() => resolve('open'), 3_000))]);
    expect(outcome).toBe('open');
    opened.socket.close();
  }, 120_000);
});

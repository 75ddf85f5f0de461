import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { loadConfig } from '../../../src/config.js';
import { startJwtVerifier } from '../../../src/services/access/jwt.js';
import { useGateway } from '../../fixtures/gateway.js';
import { eventually } from '../../fixtures/live.js';
import { startTestGateway, testEnv } from '../../fixtures/services.js';

// JWT sign-in beside the tokens file: MESH_JWKS_FILE / MESH_JWKS_URL, issuer, audience, scopes from a claim.

const ISSUER = 'https://id.example.test/';
const AUDIENCE = 'mesh-gateway';

type Key = { kid: string; privateKey: CryptoKey; jwk: JWK };
async function aKey(kid: string): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

/** A token as an identity provider issues it; `claims` and `options` override the defaults. */
async function aJwt(key: Key, claims: Record<string, unknown> = {}, options: { iss?: string; aud?: string; expiresInS?: number; kid?: string } = {}) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ scope: 'openid read act', ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: options.kid ?? key.kid })
    .setSubject((claims.sub as string) ?? 'ada@example.test')
    .setIssuer(options.iss ?? ISSUER)
    .setAudience(options.aud ?? AUDIENCE)
    .setIssuedAt(now - 5)
    .setExpirationTime(now + (options.expiresInS ?? 600))
    .sign(key.privateKey);
}

let dir: string;
const jwksPath = () => join(dir, 'jwks.json');
/** Replaces the JWKS file as a key rotation does: a new file renamed over the old one. */
function writeJwks(keys: Key[]) {
  writeFileSync(`${jwksPath()}.tmp`, JSON.stringify({ keys: keys.map((k) => k.jwk) }));
  renameSync(`${jwksPath()}.tmp`, jwksPath());
}

let first: Key;
let second: Key;
let stranger: Key;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mesh-jwks-'));
  [first, second, stranger] = await Promise.all([aKey('first'), aKey('second'), aKey('first')]);
  writeJwks([first]);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const { gw } = useGateway('jwt', { env: () => ({ MESH_JWKS_FILE: jwksPath(), MESH_JWT_ISSUER: ISSUER, MESH_JWT_AUDIENCE: AUDIENCE }) });

async function post(token: string, query: string, variables?: Record<string, unknown>) {
  const response = await fetch(gw.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, body: (await response.json()) as { data?: any; errors?: { message: string; extensions?: { code?: string } }[] } };
}

/** A subscription over SSE (a JSON POST asking text/event-stream). */
const sse = (token: string) =>
  fetch(gw.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: 'subscription { ticks(count: 1, everyMs: 10) }' }),
  });

/** Opens a graphql-ws socket with `token`: acknowledged, or closed with a code and a reason. */
function openSocket(
  token: string,
): Promise<{ socket: WebSocket; closed: Promise<{ code: number; reason: string; at: number }> } | { code: number; reason: string }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(gw.url.replace(/^http/, 'ws'), 'graphql-transport-ws');
    const closed = new Promise<{ code: number; reason: string; at: number }>((done) =>
      socket.once('close', (code, reason) => done({ code, reason: String(reason), at: Date.now() })),
    );
    socket.once('error', reject);
    socket.once('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${token}` } })));
    socket.once('message', (data) => {
      if (JSON.parse(String(data)).type === 'connection_ack') resolve({ socket, closed });
    });
    void closed.then(({ code, reason }) => resolve({ code, reason }));
  });
}

describe('a JWT signed by a key of the JWKS', () => {
  test('reads and acts as its `sub`, with the scopes of its `scope` claim', async () => {
    const token = await aJwt(first, { sub: 'ada@example.test', scope: 'openid read act' });
    const read = await post(token, '{ seats { name } }');
    expect(read.status).toBe(200);
    expect(read.body.data.seats.length).toBeGreaterThan(0);

    const acted = await post(token, 'mutation { recordHandAct(act: "restart-broker", why: "stuck after the jwt test") { __typename } }');
    expect(acted.body.data.recordHandAct.__typename).toBe('MutationRecordHandActSuccess');
    // An act answers once its records are put, or after 1.5 s when that takes longer (docs/calls.md):
    // under the whole suite's load it once did, and the list read at once had not the act yet.
    const node = await eventually(
      async () => (await post(token, '{ handActs(first: 1) { edges { node { actor act } } } }')).body.data?.handActs.edges[0]?.node,
      'the hand-act in the log',
    );
    expect(node).toEqual({ actor: 'ada@example.test', act: 'restart-broker' });
  });

  test('without the `admin` scope cannot change seats', async () => {
    const token = await aJwt(first, { scope: 'read act' });
    const renamed = await post(token, 'mutation { renameSeat(from: "nobody-here", to: "still-nobody") { __typename } }');
    expect(JSON.stringify(renamed.body)).toMatch(/FORBIDDEN|not authorized|scope/i);
  });
});

describe('a refused JWT is answered 401 with the reason', () => {
  const cases: [string, () => Promise<string>, RegExp][] = [
    ['a bad signature', () => aJwt(stranger), /the token's signature does not verify/],
    ['a wrong issuer', () => aJwt(first, {}, { iss: 'https://other.example.test/' }), /the token's issuer is not https:\/\/id\.example\.test\//],
    ['a wrong audience', () => aJwt(first, {}, { aud: 'another-service' }), /the token's audience is not mesh-gateway/],
    ['an expired token', () => aJwt(first, {}, { expiresInS: -60 }), /the token expired at \d{4}-/],
    ['a key the JWKS does not hold', () => aJwt(first, {}, { kid: 'unknown-kid' }), /signing key is not in the JWKS/],
  ];
  for (const [what, make, reason] of cases) {
    test(`over HTTP: ${what}`, async () => {
      const { status, body } = await post(await make(), '{ seats { name } }');
      expect(status).toBe(401);
      expect(body.errors?.[0]?.message).toMatch(reason);
    });
  }

  test('over SSE: an expired token', async () => {
    const response = await sse(await aJwt(first, {}, { expiresInS: -60 }));
    expect(response.status).toBe(401);
    expect(await response.text()).toMatch(/the token expired at/);
  });

  test('on a socket: closed 4403 naming the reason', async () => {
    for (const [, make, reason] of cases) {
      const refused = await openSocket(await make());
      expect(refused).toMatchObject({ code: 4403 });
      expect((refused as { reason: string }).reason).toMatch(reason);
    }
  });
});

test('over SSE a good JWT subscribes', async () => {
  const response = await sse(await aJwt(first));
  expect(response.status).toBe(200);
  expect(await response.text()).toContain('"ticks"');
});

test('a socket is closed 4403 the instant its token expires, not before', async () => {
  const expiresInS = 5;
  const token = await aJwt(first, {}, { expiresInS });
  const expiresAt = (JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString()).exp as number) * 1000;
  const opened = await openSocket(token);
  if (!('socket' in opened)) throw new Error(`refused: ${opened.reason}`);
  const closed = await opened.closed;
  expect(closed.code).toBe(4403);
  expect(closed.reason).toBe(`Forbidden: the token expired at ${new Date(expiresAt).toISOString()}`);
  expect(closed.at).toBeGreaterThanOrEqual(expiresAt);
}, 30_000);

test('a key added to MESH_JWKS_FILE is taken without a restart; a key taken out refuses its tokens and closes their sockets', async () => {
  const bySecond = await aJwt(second);
  expect((await post(bySecond, '{ seats { name } }')).status).toBe(401);
  writeJwks([first, second]);
  await eventually(async () => (await post(bySecond, '{ seats { name } }')).status === 200, 'the second key taken', 15_000);

  const opened = await openSocket(await aJwt(first));
  if (!('socket' in opened)) throw new Error(`refused: ${opened.reason}`);
  writeJwks([second]);
  const closed = await opened.closed;
  expect(closed.code).toBe(4403);
  expect((await post(await aJwt(first), '{ seats { name } }')).body.errors?.[0]?.message).toMatch(/signing key is not in the JWKS/);
  expect((await post(bySecond, '{ seats { name } }')).status).toBe(200);
  writeJwks([first]);
}, 30_000);

describe('MESH_JWKS_URL', () => {
  let server: Server;
  let served: Key[];
  let fetches = 0;
  let url: string;
  beforeAll(async () => {
    served = [first];
    server = createServer((_req, res) => {
      fetches++;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: served.map((k) => k.jwk) }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('is fetched once and cached, fetched again for an unknown key id, and names scopes from MESH_JWT_SCOPES_CLAIM', async () => {
    const verifier = startJwtVerifier(
      { jwksFile: undefined, jwksUrl: url, issuer: ISSUER, audience: AUDIENCE, scopesClaim: 'roles' },
      pino({ level: 'silent' }),
    );
    const verdict = await verifier.verify(await aJwt(first, { sub: 'grace', roles: ['read', 'admin', 'viewer'] }));
    expect(verdict).toMatchObject({ caller: { name: 'grace' } });
    expect([...('caller' in verdict ? verdict.caller.scopes : [])].sort()).toEqual(['admin', 'read']);
    await verifier.verify(await aJwt(first));
    expect(fetches).toBe(1);

    // The identity provider rotates its keys: a token of the new key is verified after one more fetch.
    served = [first, second];
    const bySecond = await aJwt(second, { sub: 'grace', roles: 'read' });
    await eventually(async () => 'caller' in (await verifier.verify(bySecond)), 'the rotated key fetched', 15_000, 250);
    expect(fetches).toBeGreaterThanOrEqual(2);
    verifier.stop();
  }, 30_000);

  test('signs a gateway in: a token of a served key reads, one of another key is refused naming why', async () => {
    served = [first];
    const urlEnv = await testEnv('jwt_url');
    const gateway = await startTestGateway({ ...urlEnv.env, MESH_JWKS_URL: url, MESH_JWT_ISSUER: ISSUER, MESH_JWT_AUDIENCE: AUDIENCE });
    try {
      const read = async (token: string) => {
        const response = await fetch(gateway.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ query: '{ seats { name } }' }),
        });
        return { status: response.status, body: (await response.json()) as { errors?: { message: string }[] } };
      };
      expect((await read(await aJwt(first, { scope: 'read' }))).status).toBe(200);
      const refused = await read(await aJwt(stranger, { scope: 'read' }));
      expect(refused.status).toBe(401);
      expect(refused.body.errors?.[0]?.message).toBe("the token's signature does not verify");
    } finally {
      await gateway.stop();
      await urlEnv.cleanup();
    }
  }, 60_000);
});

describe('the JWT variables', () => {
  const base = { MESH_JWKS_FILE: '/etc/mesh/jwks.json', MESH_JWT_ISSUER: ISSUER, MESH_JWT_AUDIENCE: AUDIENCE };
  test('need an issuer and an audience, one source of keys, and a JWKS for the others to mean anything', () => {
    expect(() => loadConfig({ ...base, MESH_JWT_AUDIENCE: '' })).toThrow(
      'JWT sign-in needs MESH_JWT_ISSUER and MESH_JWT_AUDIENCE: MESH_JWT_AUDIENCE is not set',
    );
    expect(() => loadConfig({ ...base, MESH_JWKS_URL: 'https://id.example.test/jwks' })).toThrow('set MESH_JWKS_FILE or MESH_JWKS_URL, not both');
    expect(() => loadConfig({ MESH_JWT_ISSUER: ISSUER })).toThrow(/MESH_JWT_ISSUER is set but neither MESH_JWKS_FILE nor MESH_JWKS_URL is/);
    expect(() => loadConfig({ ...base, MESH_JWKS_FILE: '', MESH_JWKS_URL: 'ftp://id.example.test/jwks' })).toThrow(/MESH_JWKS_URL must be an https: URL/);
    expect(loadConfig({ ...base, MESH_JWT_SCOPES_CLAIM: 'roles' }).jwt).toEqual({
      jwksFile: '/etc/mesh/jwks.json',
      jwksUrl: undefined,
      issuer: ISSUER,
      audience: AUDIENCE,
      scopesClaim: 'roles',
      clockToleranceS: 30,
    });
  });
});

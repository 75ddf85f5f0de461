import { SignJWT } from 'jose';
import pino from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { startJwtVerifier } from '../../../src/services/access/jwt.js';
import { aJwksFile, aSigningKey, JWT_AUDIENCE, JWT_ISSUER, type SigningKey } from '../../fixtures/jwks.js';

// Issue 35, finding 5 (busy-day limits): a JWT whose `nbf` was 5 s ahead (an identity provider's
// clock) was refused 401, and MESH_JWKS_URL could be plain `http:` to anywhere. Now the times
// have MESH_JWT_CLOCK_TOLERANCE_S (default 30) and a JWKS URL is https:, loopback aside.

let key: SigningKey;
let jwks: ReturnType<typeof aJwksFile>;
beforeAll(async () => {
  key = await aSigningKey('clock');
  jwks = aJwksFile([key]);
});
afterAll(() => jwks?.remove());
const silent = pino({ level: 'silent' });

/** A token from an issuer whose clock is `aheadS` seconds ahead of this one. */
function aTokenFromAClockAhead(aheadS: number): Promise<string> {
  const now = Math.floor(Date.now() / 1000) + aheadS;
  return new SignJWT({ scope: 'read' })
    .setProtectedHeader({ alg: 'ES256', kid: key.kid })
    .setSubject('ada@example.test')
    .setIssuer(JWT_ISSUER)
    .setAudience(JWT_AUDIENCE)
    .setIssuedAt(now)
    .setNotBefore(now)
    .setExpirationTime(now + 600)
    .sign(key.privateKey);
}

test('a token whose nbf is 5 s ahead is taken under the default tolerance; one a minute ahead is refused, naming the claim', async () => {
  const config = loadConfig({ ...jwks.env }).jwt;
  expect(config?.clockToleranceS).toBe(30);
  const verifier = startJwtVerifier(config!, silent);
  try {
    expect(await verifier.verify(await aTokenFromAClockAhead(5))).toMatchObject({ caller: { name: 'ada@example.test' } });
    expect(await verifier.verify(await aTokenFromAClockAhead(60))).toEqual({ refusal: 'the token\'s "nbf" claim is not valid now' });
  } finally {
    verifier.stop();
  }
});

test('MESH_JWT_CLOCK_TOLERANCE_S sets the tolerance: 0 refuses the 5 s clock; a tolerance over 300 s or not a number is refused at start', async () => {
  const verifier = startJwtVerifier(loadConfig({ ...jwks.env, MESH_JWT_CLOCK_TOLERANCE_S: '0' }).jwt!, silent);
  try {
    expect(await verifier.verify(await aTokenFromAClockAhead(5))).toEqual({ refusal: 'the token\'s "nbf" claim is not valid now' });
  } finally {
    verifier.stop();
  }
  expect(() => loadConfig({ ...jwks.env, MESH_JWT_CLOCK_TOLERANCE_S: '3600' })).toThrow('MESH_JWT_CLOCK_TOLERANCE_S must be 0 to 300 seconds');
  expect(() => loadConfig({ ...jwks.env, MESH_JWT_CLOCK_TOLERANCE_S: 'soon' })).toThrow(/MESH_JWT_CLOCK_TOLERANCE_S must be a number/);
});

test('a JWKS URL must be https:, plain http: only to this machine', () => {
  const env = { MESH_JWT_ISSUER: JWT_ISSUER, MESH_JWT_AUDIENCE: JWT_AUDIENCE };
  expect(() => loadConfig({ ...env, MESH_JWKS_URL: 'http://id.example.test/.well-known/jwks.json' })).toThrow(/^MESH_JWKS_URL must be https:/);
  expect(loadConfig({ ...env, MESH_JWKS_URL: 'https://id.example.test/.well-known/jwks.json' }).jwt?.jwksUrl).toBe(
    'https://id.example.test/.well-known/jwks.json',
  );
  for (const local of ['http://127.0.0.1:8080/jwks.json', 'http://localhost/jwks.json', 'http://[::1]:9000/jwks.json']) {
    expect(loadConfig({ ...env, MESH_JWKS_URL: local }).jwt?.jwksUrl).toBe(local);
  }
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { aBrowser, type Browser } from '../fixtures/browser.js';
import { useGateway } from '../fixtures/gateway.js';
import { anAgent } from '../fixtures/live.js';

// The dashboard signed in with an identity provider's JWT: told when it expires, resumed with a fresh one.

const ISSUER = 'https://id.example.test/';
const AUDIENCE = 'mesh-gateway';
let browser: Browser;
let dir: string;
let privateKey: CryptoKey;

const aJwt = (expiresInS: number) => {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ scope: 'read' })
    .setProtectedHeader({ alg: 'ES256', kid: 'wall' })
    .setSubject('wall-screen')
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setExpirationTime(now + expiresInS)
    .sign(privateKey);
};

beforeAll(async () => {
  const keys = await generateKeyPair('ES256');
  privateKey = keys.privateKey;
  dir = mkdtempSync(join(tmpdir(), 'mesh-jwks-dash-'));
  writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [{ ...(await exportJWK(keys.publicKey)), kid: 'wall', alg: 'ES256' }] }));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const { gw: gateway, env } = useGateway('dashboard_jwt', {
  env: () => ({ MESH_JWKS_FILE: join(dir, 'jwks.json'), MESH_JWT_ISSUER: ISSUER, MESH_JWT_AUDIENCE: AUDIENCE }),
});
beforeAll(async () => {
  browser = await aBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

test('the dashboard takes a JWT, says when it expired, and with a fresh one resumes where it was without the whole mesh again', async () => {
  const { page } = browser;
  await page.goto(`${new URL(gateway.url).origin}/`);
  await expect.poll(() => page.locator('#connection').getAttribute('data-state'), { timeout: 15_000 }).toBe('refused');
  await page.locator('#token-input').fill(await aJwt(8));
  await page.locator('#token-form button').click();
  await expect.poll(() => page.locator('#connection').getAttribute('data-state'), { timeout: 15_000 }).toBe('live');
  await expect.poll(() => page.locator('#composition').getAttribute('data-seq'), { timeout: 15_000 }).toMatch(/^\d+$/);
  const wholes = () => page.evaluate(() => performance.getEntriesByName('mesh:full').length);
  const wholesBefore = await wholes();
  expect(wholesBefore).toBeGreaterThan(0);

  // The token expires: the gateway closes the socket 4403 and the page says why.
  await expect.poll(() => page.locator('#connection').getAttribute('data-state'), { timeout: 30_000 }).toBe('refused');
  expect(await page.locator('#token-message').textContent()).toMatch(/^the gateway refused this token: the token expired at \d{4}-/);

  // News heard while the page was refused arrives once it signs in again.
  const agent = await anAgent(env.env.NATS_URL);
  agent.heartbeat(env.subjects, 'jwt-dash-1', { site: 'eu-1', modules: ['broker'] });
  await agent.close();
  await expect.poll(() => gateway.mesh.status.current()?.machines.some((m) => m.name === 'jwt-dash-1'), { timeout: 30_000 }).toBe(true);

  await page.locator('#token-input').fill(await aJwt(600));
  await page.locator('#token-form button').click();
  await expect.poll(() => page.locator('#connection').getAttribute('data-state'), { timeout: 15_000 }).toBe('live');
  await expect.poll(() => page.locator('.m[data-name="jwt-dash-1"]').count(), { timeout: 15_000 }).toBe(1);
  await expect
    .poll(async () => Number(await page.locator('#composition').getAttribute('data-seq')), { timeout: 15_000 })
    .toBe(gateway.mesh.status.current()?.seq);
  // Resumed with after: the seq it held — deltas, not a whole composition again.
  expect(await wholes()).toBe(wholesBefore);
}, 120_000);

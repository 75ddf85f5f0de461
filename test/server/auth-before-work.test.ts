import { expect, test } from 'vitest';
import { useGateway } from '../fixtures/gateway.js';
import { eventually } from '../fixtures/live.js';
import { logInto } from '../fixtures/log.js';
import { startTestGateway, type TokenFixture } from '../fixtures/services.js';

// Issue 20, finding 5: with a tokens file, an anonymous request is 401 before any work — not parsed,
// not validated, not logged beyond its access line — and field suggestions are off.

const READER: TokenFixture = { name: 'reader', scopes: ['read'], token: 'token-of-reader-auth' };

const { gw: gateway, env } = useGateway('auth_first', { env: () => ({ LOG_LEVEL: 'info' }), tokens: [READER], logger: () => logInto(lines, 'info') });
const lines: Record<string, any>[] = [];

const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(gateway.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', ...headers }, body: JSON.stringify(body) });

test('an anonymous request is 401 whatever its document: no schema oracle', async () => {
  for (const query of ['{ status { seq } }', '{ nosuch }', 'query Probe { seatz { name } }', '{ __schema { types { name } } }', 'not graphql at all {']) {
    const response = await post({ query });
    expect(response.status, query).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    const text = await response.text();
    expect(text).not.toMatch(/Cannot query field|Did you mean|Syntax Error/);
    expect(JSON.parse(text)).toEqual({ errors: [{ message: 'an Authorization: Bearer <token> header is required', extensions: { code: 'FORBIDDEN' } }] });
  }
  const wrong = await post({ query: '{ nosuch }' }, { authorization: 'Bearer not-a-token' });
  expect(wrong.status).toBe(401);
  expect(await wrong.json()).toMatchObject({ errors: [{ message: 'the token is not known' }] });
  // A GET with the query in its URL, and a body that is not JSON, likewise.
  const get = await fetch(`${gateway.url}?query=${encodeURIComponent('{ nosuch }')}`, { headers: { accept: 'application/json', 'x-graphql-yoga-csrf': '1' } });
  expect(get.status).toBe(401);
  const junk = await fetch(gateway.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query": "{ nosuch' });
  expect(junk.status).toBe(401);
});

test('an anonymous request leaves its access line and nothing else: no operation name read from it', async () => {
  const response = await post({ query: 'query Probe { nosuch }' }, { 'x-request-id': 'anonymous-probe-1' });
  expect(response.status).toBe(401);
  const line = await eventually(() => lines.find((l) => l.requestId === 'anonymous-probe-1'), 'its access line');
  expect(line).toMatchObject({ msg: 'request', status: 401, caller: 'none' });
  expect(line.operation).toBeUndefined();
  expect(lines.filter((l) => JSON.stringify(l).includes('Probe') || JSON.stringify(l).includes('nosuch'))).toEqual([]);
});

test('GraphiQL is still served to a browser without a token (its requests then need one)', async () => {
  const page = await fetch(gateway.url, { headers: { accept: 'text/html' } });
  expect(page.status).toBe(200);
  expect(await page.text()).toContain('<title>mesh-gateway</title>');
});

test('with tokens set, a field error suggests no field names, even with introspection on', async () => {
  const response = await post({ query: '{ seatz { name } }' }, { authorization: `Bearer ${READER.token}` });
  const body = await response.json();
  expect(body.errors[0].message).toMatch(/Cannot query field "seatz"/);
  expect(body.errors[0].message).not.toMatch(/Did you mean/);
});

test('with introspection off, a field error suggests no field names, even on an open gateway', async () => {
  const closed = await startTestGateway({ ...env.env, MESH_INTROSPECTION: 'off' });
  try {
    const body = await closed.gql('{ seatz { name } }');
    expect(body.errors?.[0]?.message).toMatch(/Cannot query field "seatz"/);
    expect(body.errors?.[0]?.message).not.toMatch(/Did you mean/);
  } finally {
    await closed.stop();
  }
});

// Finding 6: quiet doors.
const base = () => gateway.url.replace(/\/graphql$/, '');

test('/ready without a read token says only whether the gateway is ready; with one, its checks', async () => {
  const anonymous = await fetch(`${base()}/ready`);
  const quiet = await anonymous.json();
  expect(Object.keys(quiet)).toEqual(['ready']);
  expect([200, 503]).toContain(anonymous.status);
  expect(JSON.stringify(quiet)).not.toMatch(/nats:|127\.0\.0\.1|replica/);
  const detailed = await (await fetch(`${base()}/ready`, { headers: { authorization: `Bearer ${READER.token}` } })).json();
  expect(detailed).toMatchObject({ replica: gateway.mesh.config.replica, checks: { store: expect.any(Object), nats: expect.any(Object) } });
});

test("the dashboard's page may connect to its own origin only", async () => {
  const page = await fetch(`${base()}/`);
  // Built by the tests' global setup (test/build-dashboard.ts).
  expect(page.status).toBe(200);
  const policy = page.headers.get('content-security-policy');
  expect(policy).toMatch(/connect-src 'self';/);
  expect(policy).not.toMatch(/ws:|wss:/);
});

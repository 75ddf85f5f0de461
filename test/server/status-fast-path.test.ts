import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { type Gateway, startGateway } from '../../src/gateway.js';
import { aComposition } from '../fixtures/compositions.js';
import { eventually, publishHeard, seqPastStart } from '../fixtures/live.js';
import { logInto } from '../fixtures/log.js';
import { aTokensFile, NATS_URL, type TestEnv, testEnv } from '../fixtures/services.js';

// A kept `status` answer is given before Yoga (src/server/status-fast-path.ts): what a client sees
// must be what Yoga's path gave it, every check included.
const READER = 'Bearer fast-reader-1';
const BURSTY = 'Bearer fast-bursty-2';
const STATUS = 'query FastStatus { status { seq machines { name state } seats { name held } } }';
const OPS_PER_SECOND = 5;

let env: TestEnv;
let gateway: Gateway;
let nc: NatsConnection;
let tokens: ReturnType<typeof aTokensFile>;
const lines: Record<string, any>[] = [];

beforeAll(async () => {
  tokens = aTokensFile([
    { name: 'reader', scopes: ['read'], token: 'fast-reader-1' },
    { name: 'bursty', scopes: ['read'], token: 'fast-bursty-2' },
  ]);
  env = await testEnv('fastpath');
  gateway = await startGateway(loadConfig({ ...env.env, MESH_TOKENS_FILE: tokens.path, MESH_OPS_PER_SECOND: String(OPS_PER_SECOND), LOG_LEVEL: 'info' }), {
    logger: logInto(lines, 'info'),
  });
  nc = await connect({ servers: NATS_URL });
  await publishHeard(nc, gateway, aComposition(await seqPastStart(gateway), 20));
});

afterAll(async () => {
  await nc?.close();
  await gateway?.stop();
  await env?.cleanup();
  tokens?.remove();
});

const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(gateway.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', authorization: READER, ...headers },
    body: JSON.stringify(body),
  });
const get = (params: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(`${gateway.url}?${new URLSearchParams(params)}`, { headers: { accept: 'application/json', authorization: READER, ...headers } });

/** The headers a client reads, without those that differ per response (date, request id). */
const headersOf = (response: Response) =>
  Object.fromEntries([...response.headers].filter(([name]) => name !== 'date' && name !== 'x-request-id').sort(([a], [b]) => a.localeCompare(b)));
const hits = () => gateway.http.statusCache!.stats().hits;

test('a kept status answer has the executed answer’s bytes and headers, by POST and GET, and its access line names the operation', async () => {
  const executed = await post({ query: STATUS, operationName: 'FastStatus' });
  const executedBody = await executed.text();
  expect(JSON.parse(executedBody).data.status.machines).toHaveLength(20);
  const before = hits();
  const kept = await post({ query: STATUS, operationName: 'FastStatus' }, { 'x-request-id': 'fast-post-1' });
  expect(await kept.text()).toBe(executedBody);
  expect(kept.status).toBe(200);
  expect(headersOf(kept)).toEqual(headersOf(executed));
  expect(kept.headers.get('x-request-id')).toBe('fast-post-1');
  const byGet = await get({ query: STATUS, operationName: 'FastStatus' }, { 'x-graphql-yoga-csrf': '1', 'x-request-id': 'fast-get-1' });
  expect(await byGet.text()).toBe(executedBody);
  expect(headersOf(byGet)).toEqual(headersOf(executed));
  expect(hits() - before).toBe(2);
  for (const requestId of ['fast-post-1', 'fast-get-1']) {
    const line = await eventually(() => lines.find((l) => l.msg === 'request' && l.requestId === requestId), `the access line of ${requestId}`);
    expect(line).toMatchObject({ path: '/graphql', operation: 'FastStatus', caller: 'reader', status: 200 });
  }
});

test('a kept answer is still refused what Yoga’s path refuses: no token, a GET without the CSRF header, bad variables, an unknown parameter', async () => {
  expect((await post({ query: STATUS })).status).toBe(200);
  // Another operation, its body read here and handed on: Yoga answers it as ever.
  const other = await post({ query: 'query Other { __typename status { seq } }', variables: {} });
  expect(other.status).toBe(200);
  const answered = await other.json();
  expect(answered.errors).toBeUndefined();
  expect(answered.data.status.seq).toEqual(expect.any(Number));
  const anonymous = await post({ query: STATUS }, { authorization: '' });
  expect(anonymous.status).toBe(401);
  const forged = await get({ query: STATUS });
  expect(forged.status).toBe(403);
  expect((await forged.json()).errors[0].extensions.code).toBe('CSRF_REFUSED');
  const nul = await post({ query: STATUS, variables: { x: 'a\u0000b' } });
  expect(nul.status).toBe(400);
  expect((await nul.json()).errors[0].extensions.code).toBe('INVALID');
  const unknown = await post({ query: STATUS, stray: 1 });
  expect(unknown.status).toBe(400);
  // A page of another origin is answered by Yoga, with no CORS header (no MESH_CORS_ORIGINS).
  const cross = await post({ query: STATUS }, { origin: 'https://elsewhere.example' });
  expect(cross.status).toBe(200);
  expect(cross.headers.get('access-control-allow-origin')).toBeNull();
});

test('kept answers count against the caller’s rate: past it, 429 with Retry-After, as Yoga’s path answers', async () => {
  // The first executes and is kept; the burst (twice the rate) then runs out.
  const statuses: number[] = [];
  let refused: Response | undefined;
  for (let i = 0; i < OPS_PER_SECOND * 4 && !refused; i++) {
    const response = await post({ query: STATUS }, { authorization: BURSTY });
    statuses.push(response.status);
    if (response.status === 429) refused = response;
    else await response.arrayBuffer();
  }
  expect(refused?.headers.get('retry-after')).toMatch(/^\d+$/);
  expect((await refused!.json()).errors[0].extensions.code).toBe('TOO_MANY_REQUESTS');
  expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(OPS_PER_SECOND * 2);
  // Another caller is not held back.
  expect((await post({ query: STATUS })).status).toBe(200);
});

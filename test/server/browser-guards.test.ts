import { request as httpRequest } from 'node:http';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { ConfigError, loadConfig } from '../../src/config.js';
import { aComposition } from '../fixtures/compositions.js';
import { useGateway } from '../fixtures/gateway.js';
import { publishHeard, seqPastStart, sseSubscribe, wsSubscribe } from '../fixtures/live.js';
import { SEAT } from '../fixtures/operations.js';
import { startTestGateway, type TestGateway } from '../fixtures/services.js';
import { RawWsClient } from '../fixtures/ws-client.js';

const LISTED = 'https://ops.example.com';
const ALSO_LISTED = 'https://wall.example.com';
const FOREIGN = 'https://evil.example';

const { gw, env } = useGateway('browser');
let withCors: TestGateway;
beforeAll(async () => {
  withCors = await startTestGateway({ ...env.env, MESH_CORS_ORIGINS: `${LISTED}, ${ALSO_LISTED}` });
});
afterAll(async () => {
  await withCors?.stop();
});

const defineSeat = (name: string) => `mutation { defineSeat(input: { name: "${name}", scope: "site" }) { __typename } }`;
const seatExists = async (name: string) => (await gw.gql(SEAT, { name })).data.seat !== null;

/** A request sent with node:http, which lets a test set Host as a rebound DNS name would. */
function rawRequest(url: string, options: { method?: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? 'GET', headers: options.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.once('error', reject);
    req.end(options.body);
  });
}

describe('a page of another site cannot act on an open gateway', () => {
  test('a cross-site form POST is refused 403 and runs nothing', async () => {
    const response = await fetch(gw.url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: FOREIGN },
      body: new URLSearchParams({ query: defineSeat('formseat') }).toString(),
    });
    expect(response.status).toBe(403);
    expect(((await response.json()) as any).errors[0]).toMatchObject({
      message: expect.stringMatching(/x-graphql-yoga-csrf/),
      extensions: { code: 'CSRF_REFUSED' },
    });
    expect(await seatExists('formseat')).toBe(false);
  });

  test('a cross-site text/plain POST of a JSON body is refused 403 and runs nothing', async () => {
    const response = await fetch(gw.url, {
      method: 'POST',
      headers: { 'content-type': 'text/plain;charset=UTF-8', origin: FOREIGN },
      body: JSON.stringify({ query: defineSeat('plainseat') }),
    });
    expect(response.status).toBe(403);
    expect(await seatExists('plainseat')).toBe(false);
  });

  test('a GET without the CSRF header is refused; with it, it reads', async () => {
    const url = `${gw.url}?query=${encodeURIComponent('{ __typename }')}`;
    expect((await fetch(url, { headers: { accept: 'application/json' } })).status).toBe(403);
    const allowed = await fetch(url, { headers: { accept: 'application/json', 'x-graphql-yoga-csrf': '1' } });
    expect(allowed.status).toBe(200);
    expect(await allowed.json()).toEqual({ data: { __typename: 'Query' } });
  });

  test('a JSON POST still runs its mutation', async () => {
    expect((await gw.gql(defineSeat('jsonseat'))).data.defineSeat.__typename).toBe('MutationDefineSeatSuccess');
    expect(await seatExists('jsonseat')).toBe(true);
  });
});

test('a status answer kept by the status query cache is not served to a cross-site or rebound request', async () => {
  const nc = await connect({ servers: env.env.NATS_URL });
  try {
    await publishHeard(nc, gw, aComposition(await seqPastStart(gw), 5));
    const body = JSON.stringify({ query: '{ status { seq } }' });
    const json = () => fetch(gw.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body });
    // The gateway's own composer may start a new composition between two asks: ask until one is a hit.
    const hits = () => gw.http.statusCache!.stats().hits;
    const first = hits();
    for (let i = 0; i < 20 && hits() === first; i++) expect((await json()).status).toBe(200);
    const before = hits();
    expect(before).toBeGreaterThan(first);
    const plain = await fetch(gw.url, { method: 'POST', headers: { 'content-type': 'text/plain', accept: 'application/json', origin: FOREIGN }, body });
    expect(plain.status).toBe(403);
    const rebound = await rawRequest(gw.url, { method: 'POST', headers: { host: 'evil.example', 'content-type': 'application/json' }, body });
    expect(rebound.status).toBe(403);
    expect(hits()).toBe(before);
  } finally {
    await nc.close();
  }
});

describe('CORS', () => {
  const preflight = (url: string, origin: string) =>
    fetch(url, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
  const post = (url: string, origin: string) =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', origin }, body: JSON.stringify({ query: '{ __typename }' }) });

  test('without MESH_CORS_ORIGINS no Origin is echoed, with or without credentials', async () => {
    for (const response of [await preflight(gw.url, FOREIGN), await post(gw.url, FOREIGN)]) {
      expect(response.headers.get('access-control-allow-origin')).toBeNull();
      expect(response.headers.get('access-control-allow-credentials')).toBeNull();
    }
  });

  test('an Origin MESH_CORS_ORIGINS does not list is not echoed', async () => {
    for (const response of [await preflight(withCors.url, FOREIGN), await post(withCors.url, FOREIGN)]) {
      expect(response.headers.get('access-control-allow-origin')).not.toBe(FOREIGN);
    }
  });

  test('an Origin MESH_CORS_ORIGINS lists is echoed, with credentials', async () => {
    for (const origin of [LISTED, ALSO_LISTED]) {
      for (const response of [await preflight(withCors.url, origin), await post(withCors.url, origin)]) {
        expect(response.headers.get('access-control-allow-origin')).toBe(origin);
        expect(response.headers.get('access-control-allow-credentials')).toBe('true');
      }
    }
  });

  test.each(['*', 'ops.example.com', 'https://ops.example.com/graphql', 'ftp://ops.example.com'])(
    'MESH_CORS_ORIGINS=%s stops the start, naming the variable',
    (value) => {
      expect(() => loadConfig({ MESH_CORS_ORIGINS: value })).toThrow(ConfigError);
      expect(() => loadConfig({ MESH_CORS_ORIGINS: value })).toThrow(/MESH_CORS_ORIGINS/);
    },
  );
});

describe('a loopback gateway answers loopback names only (DNS rebinding)', () => {
  const body = JSON.stringify({ query: defineSeat('rebound') });

  test.each(['evil.example', 'evil.example:4000', '127.0.0.1.evil.example'])('Host %j is answered 403 and runs nothing', async (host) => {
    const { status, body: answer } = await rawRequest(gw.url, { method: 'POST', headers: { host, 'content-type': 'application/json' }, body });
    expect(status).toBe(403);
    expect(JSON.parse(answer).errors[0]).toMatchObject({ message: expect.stringMatching(/loopback names only/), extensions: { code: 'FORBIDDEN_HOST' } });
    expect(await seatExists('rebound')).toBe(false);
  });

  test('GraphiQL and /health are refused under a foreign Host too', async () => {
    expect((await rawRequest(gw.url, { headers: { host: 'evil.example', accept: 'text/html' } })).status).toBe(403);
    expect((await rawRequest(gw.url.replace('/graphql', '/health'), { headers: { host: 'evil.example' } })).status).toBe(403);
  });

  test.each(['localhost', 'LOCALHOST:1234', '127.0.0.1', '[::1]:80'])('Host %j is served', async (host) => {
    const { status, body: answer } = await rawRequest(gw.url, {
      method: 'POST',
      headers: { host, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(status).toBe(200);
    expect(JSON.parse(answer)).toEqual({ data: { __typename: 'Query' } });
  });

  test('a WebSocket upgrade with a foreign Host is refused 403', async () => {
    const socket = new WebSocket(gw.url.replace(/^http/, 'ws'), 'graphql-transport-ws', { headers: { host: 'evil.example' } });
    const status = await new Promise<number>((resolve, reject) => {
      socket.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      socket.once('open', () => reject(new Error('the upgrade was accepted')));
      socket.once('error', () => undefined);
    });
    expect(status).toBe(403);
  });

  test('a WebSocket with a loopback Host is served', async () => {
    const client = await RawWsClient.connect(gw.url.replace('127.0.0.1', 'localhost'));
    client.subscribe('1', 'subscription { ticks(count: 2, everyMs: 10) }');
    await client.until(() => client.completed.has('1'), 5_000, 'ticks to complete');
    expect(client.of('1').map((m) => m.payload.data?.ticks)).toEqual([1, 2]);
    await client.close();
  });
});

describe('what a browser and the clients use still works', () => {
  test('GraphiQL is served at /graphql', async () => {
    const response = await fetch(gw.url, { headers: { accept: 'text/html' } });
    expect(response.status).toBe(200);
    expect(await response.text()).toMatch(/graphiql/i);
  });

  test('SSE (a JSON POST asking text/event-stream) streams a subscription', async () => {
    const received = sseSubscribe<{ ticks: number }>(gw.url, 'subscription { ticks(count: 2, everyMs: 10) }');
    expect((await received.atLeast(2)).map((r) => r.ticks)).toEqual([1, 2]);
    received.close();
  });

  test('graphql-ws streams a subscription', async () => {
    const received = wsSubscribe<{ ticks: number }>(gw.url, 'subscription { ticks(count: 2, everyMs: 10) }');
    expect((await received.atLeast(2)).map((r) => r.ticks)).toEqual([1, 2]);
    received.close();
  });
});

import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { useGateway } from '../fixtures/gateway.js';
import { aTokensFile, startTestGateway, type TestGateway } from '../fixtures/services.js';

const { gw, env } = useGateway('server');

const wsUrl = (url: string) => url.replace(/^http/, 'ws');

function collectTicks(url: string, connectionParams?: Record<string, string>): Promise<number[]> {
  const client = createClient({ url: wsUrl(url), webSocketImpl: WebSocket, connectionParams, retryAttempts: 0 });
  const ticks: number[] = [];
  return new Promise((resolve, reject) => {
    client.subscribe<{ ticks: number }>(
      { query: 'subscription { ticks(count: 3, everyMs: 20) }' },
      {
        next: ({ data }) => ticks.push(data!.ticks),
        error: (error) => {
          client.dispose();
          reject(error);
        },
        complete: () => {
          client.dispose();
          resolve(ticks);
        },
      },
    );
  });
}

test('GraphiQL is served to a browser at /graphql', async () => {
  const response = await fetch(gw.url, { headers: { accept: 'text/html' } });
  expect(response.status).toBe(200);
  expect(await response.text()).toMatch(/graphiql/i);
});

test('/health answers 200', async () => {
  expect((await fetch(gw.url.replace('/graphql', '/health'))).status).toBe(200);
});

test('a subscription over WebSocket on the same port receives each event and completes', async () => {
  expect(await collectTicks(gw.url)).toEqual([1, 2, 3]);
});

describe('with MESH_TOKENS_FILE', () => {
  let tokened: TestGateway;
  let tokens: ReturnType<typeof aTokensFile> | undefined;
  beforeAll(async () => {
    tokens = aTokensFile([
      { name: 'dashboard', scopes: ['read'], token: 'read-token' },
      { name: 'operator', scopes: ['read', 'act', 'admin'], token: 'admin-token' },
    ]);
    const file = tokens.path;
    tokened = await startTestGateway({ ...env.env, MESH_TOKENS_FILE: file });
  });
  afterAll(async () => {
    await tokened?.stop();
    tokens?.remove();
  });

  test('a request without a token is refused with 401', async () => {
    const response = await fetch(tokened.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ seats { name } }"}' });
    expect(response.status).toBe(401);
  });

  test('a read token reads, and its seat changes come back Forbidden as data', async () => {
    const read = { authorization: 'Bearer read-token' };
    expect((await tokened.gql('{ seats { name } }', {}, read)).data.seats.length).toBeGreaterThan(0);
    const { data, errors } = await tokened.gql(`mutation { renameSeat(from: "queue", to: "q2") { __typename ... on Error { message code } } }`, {}, read);
    expect(errors).toBeUndefined();
    expect(data.renameSeat).toEqual({ __typename: 'ForbiddenError', code: 'FORBIDDEN', message: 'dashboard may not run renameSeat: it needs the admin scope' });
  });

  test('a WebSocket without a valid token is closed with 4403', async () => {
    await expect(collectTicks(tokened.url, { Authorization: 'Bearer wrong' })).rejects.toMatchObject({ code: 4403 });
    expect(await collectTicks(tokened.url, { Authorization: 'Bearer read-token' })).toEqual([1, 2, 3]);
  });
});

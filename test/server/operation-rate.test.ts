import { expect, test } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { useGateway } from '../fixtures/gateway.js';
import { RawWsClient } from '../fixtures/ws-client.js';

const { gw } = useGateway('oprate', {
  // 5 a second, 10 at once.
  env: { MESH_OPS_PER_SECOND: '5' },
  tokens: [
    { name: 'looper', scopes: ['read'], token: 'looper-token' },
    { name: 'calm', scopes: ['read'], token: 'calm-token' },
  ],
});

/** Asks before a refusal must have come: the burst of 10 and then some, on a machine however slow. */
const ASKS_MAX = 200;
const WS_ASKS = 60;

const ask = (token: string) =>
  fetch(gw.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: '{ __typename }' }),
  });

test('past MESH_OPS_PER_SECOND a caller is answered 429 with Retry-After; another caller is not; it may ask again after waiting', async () => {
  // Asked until refused, however slowly this machine answers (a slow one refills the bucket as it goes):
  // the burst of 10 is always answered, and a refusal comes within the bound.
  const answers: Response[] = [];
  const started = performance.now();
  while (answers.length < ASKS_MAX && answers.at(-1)?.status !== 429) answers.push(await ask('looper-token'));
  const seconds = (performance.now() - started) / 1000;
  const statuses = answers.map((r) => r.status);
  expect(statuses.slice(0, 10)).toEqual(Array(10).fill(200));
  expect(statuses.at(-1), `a 429 within ${ASKS_MAX} asks`).toBe(429);
  // No more were let through than the burst and what 5 a second refilled meanwhile, however long that was.
  expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(10 + Math.ceil(5 * seconds));
  const refused = answers.at(-1)!;
  const retryAfter = Number(refused.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(((await refused.json()) as any).errors[0]).toMatchObject({
    message: 'looper asks more than 5 operations a second; retry after 1 s',
    extensions: { code: 'TOO_MANY_REQUESTS' },
  });
  expect((await ask('calm-token')).status).toBe(200);
  // A client that waits the Retry-After it was given is answered.
  await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
  expect((await ask('looper-token')).status).toBe(200);
});

test('over graphql-ws an operation past the rate is answered with an error; the socket goes on', async () => {
  // Far more than the burst of 10 plus what a slow server's refill lets through while it answers them.
  const client = await RawWsClient.connect(gw.url, 'Bearer looper-token');
  for (let i = 0; i < WS_ASKS; i++) client.subscribe(`q${i}`, '{ __typename }');
  await client.until(() => client.completed.size + client.errors.length >= WS_ASKS, 30_000, 'every answer');
  expect(client.errors.length).toBeGreaterThan(0);
  expect(client.errors[0]!.payload).toMatchObject([
    { message: expect.stringMatching(/looper asks more than 5 operations a second/), extensions: { code: 'TOO_MANY_REQUESTS' } },
  ]);
  expect(client.socket.readyState).toBe(client.socket.OPEN);
  await new Promise((resolve) => setTimeout(resolve, 1_000)); // the 1 s the refusal asked to wait
  client.subscribe('later', '{ __typename }');
  await client.until(() => client.completed.has('later'), 5_000, 'a later operation');
  expect(client.of('later')[0]!.payload).toEqual({ data: { __typename: 'Query' } });
  await client.close();
});

test('MESH_OPS_PER_SECOND=0 stops the start, naming it', () => {
  expect(() => loadConfig({ MESH_OPS_PER_SECOND: '0' })).toThrow(ConfigError);
  expect(() => loadConfig({ MESH_OPS_PER_SECOND: '0' })).toThrow(/MESH_OPS_PER_SECOND/);
});

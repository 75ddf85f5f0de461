import { afterAll, describe, expect, test } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { useGateway } from '../fixtures/gateway.js';
import { eventually } from '../fixtures/live.js';
import { RawWsClient } from '../fixtures/ws-client.js';

const { gw } = useGateway('wscaps', {
  env: () => ({ MESH_WS_OPERATIONS_PER_SOCKET: '3', MESH_WS_SOCKETS_PER_CALLER: '2', MESH_WS_SOCKETS_PER_ADDRESS: '4' }),
  tokens: [
    { name: 'wall', scopes: ['read'], token: 'wall-token' },
    { name: 'ops', scopes: ['read'], token: 'ops-token' },
    { name: 'kiosk', scopes: ['read'], token: 'kiosk-token' },
  ],
});
const clients: RawWsClient[] = [];
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
});

const open = async (token: string) => {
  const client = await RawWsClient.connect(gw.url, `Bearer ${token}`);
  clients.push(client);
  return client;
};
/** Open WebSockets as the gateway counts them (its mesh_websockets gauge). */
const socketsOpen = async () => {
  const text = await (await fetch(`${new URL(gw.url).origin}/metrics`, { headers: { authorization: 'Bearer wall-token' } })).text();
  return Number(/^mesh_websockets(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1]);
};
const closeAll = async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  // The server has heard every close (it drops a socket from its counts as it hears its close).
  await eventually(async () => (await socketsOpen()) === 0, 'the server to hear every close');
};

const TICKS = 'subscription { ticks(count: 100000, everyMs: 50) }';

describe('operations per socket', () => {
  test('past MESH_WS_OPERATIONS_PER_SOCKET an operation is answered with an error; the socket and its others go on', async () => {
    const client = await open('wall-token');
    for (const id of ['1', '2', '3']) client.subscribe(id, TICKS);
    await client.until(() => ['1', '2', '3'].every((id) => client.of(id).length > 0), 5_000, 'three running');
    client.subscribe('4', TICKS);
    await client.until(() => client.errors.some((e) => e.id === '4'), 5_000, 'the fourth refused');
    expect(client.errors.find((e) => e.id === '4')!.payload).toMatchObject([
      { message: 'this socket runs 3 operations; at most 3: complete one first', extensions: { code: 'TOO_MANY_REQUESTS' } },
    ]);
    const seen = client.of('1').length;
    await client.until(() => client.of('1').length > seen, 5_000, 'the first going on');
    // Completing one makes room for another.
    // The server reads a socket's messages in order and forgets an operation as it reads its complete.
    client.complete('2');
    client.subscribe('5', TICKS);
    await client.until(() => client.of('5').length > 0, 5_000, 'the fifth running');
    expect(client.socket.readyState).toBe(client.socket.OPEN);
    await closeAll();
  });
});

describe('sockets per caller and per address', () => {
  test('past MESH_WS_SOCKETS_PER_CALLER a socket of that caller is closed 4429; another caller still connects', async () => {
    await open('wall-token');
    await open('wall-token');
    await expect(RawWsClient.connect(gw.url, 'Bearer wall-token')).rejects.toMatchObject({ code: 4429 });
    await open('ops-token');
    await closeAll();
    // Once closed, the caller's sockets count no more.
    await open('wall-token');
    await closeAll();
  });

  test('past MESH_WS_SOCKETS_PER_ADDRESS a socket from that address is closed 4429', async () => {
    await open('wall-token');
    await open('wall-token');
    await open('ops-token');
    await open('ops-token');
    // kiosk has no socket yet: the address is what is full.
    await expect(RawWsClient.connect(gw.url, 'Bearer kiosk-token')).rejects.toMatchObject({ code: 4429 });
    await closeAll();
    await open('kiosk-token');
    await closeAll();
  });

  test.each(['MESH_WS_OPERATIONS_PER_SOCKET', 'MESH_WS_SOCKETS_PER_CALLER', 'MESH_WS_SOCKETS_PER_ADDRESS'])('%s=0 stops the start, naming it', (key) => {
    expect(() => loadConfig({ [key]: '0' })).toThrow(ConfigError);
    expect(() => loadConfig({ [key]: '0' })).toThrow(new RegExp(key));
  });
});

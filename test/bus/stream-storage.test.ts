import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { newsStreamName } from '../../src/bus/news-stream.js';
import { statusStreamName } from '../../src/bus/status-stream.js';
import { type NatsServer, startNatsServer } from '../fixtures/nats-server.js';
import { startTestGateway, type TestEnv, testEnv } from '../fixtures/services.js';

// An operator plans JetStream storage: MESH_NEWS_MAX_BYTES and MESH_STATUS_MAX_BYTES size the two
// streams each controller reserves, and a server without room refuses the start in words.

const MiB = 1 << 20;
let nats: NatsServer;
let env: TestEnv;

beforeAll(async () => {
  // A server of its own whose JetStream file store is 100 MiB: 1 GiB streams cannot fit.
  nats = await startNatsServer({ confText: 'jetstream { max_file_store: 100MB, max_memory_store: 16MB }' });
  env = await testEnv('storage');
  env.env.NATS_URL = nats.url;
}, 60_000);
afterAll(async () => {
  await nats?.stop();
  await env?.cleanup();
});

async function maxBytesOf(stream: string): Promise<number> {
  const nc = await connect({ servers: nats.url });
  try {
    return (await (await jetstreamManager(nc)).streams.info(stream)).config.max_bytes;
  } finally {
    await nc.close();
  }
}

test('a start whose streams do not fit the NATS store is refused naming the variables and the free store', async () => {
  const refused = await startTestGateway(env.env).then(
    async (gateway) => {
      await gateway.stop();
      throw new Error('the gateway started on a store too small for its streams');
    },
    (error: Error) => error.message,
  );
  expect(refused).toMatch(/NATS has too little JetStream file store for the stream \S+_status/);
  expect(refused).toContain('MESH_STATUS_MAX_BYTES=1073741824 (1024 MiB) × MESH_KV_REPLICAS=1');
  expect(refused).toMatch(/the server has about (9\d|100) MiB free/);
  expect(refused).toContain('MESH_NEWS_MAX_BYTES + MESH_STATUS_MAX_BYTES');
  expect(refused).toContain('insufficient storage');
}, 60_000);

test('streams sized by MESH_NEWS_MAX_BYTES and MESH_STATUS_MAX_BYTES fit, and a changed size is applied at the next start', async () => {
  let gateway = await startTestGateway({ ...env.env, MESH_NEWS_MAX_BYTES: String(40 * MiB), MESH_STATUS_MAX_BYTES: String(20 * MiB) });
  expect(await maxBytesOf(newsStreamName(env.controller))).toBe(40 * MiB);
  expect(await maxBytesOf(statusStreamName(env.controller))).toBe(20 * MiB);
  await gateway.stop();

  gateway = await startTestGateway({ ...env.env, MESH_NEWS_MAX_BYTES: String(30 * MiB), MESH_STATUS_MAX_BYTES: String(25 * MiB) });
  expect(await maxBytesOf(newsStreamName(env.controller))).toBe(30 * MiB);
  expect(await maxBytesOf(statusStreamName(env.controller))).toBe(25 * MiB);
  await gateway.stop();

  // Raising the news stream past the room left is refused the same way, naming its variable.
  await expect(startTestGateway({ ...env.env, MESH_NEWS_MAX_BYTES: String(500 * MiB), MESH_STATUS_MAX_BYTES: String(25 * MiB) })).rejects.toThrow(
    /stream \S+_news: it reserves MESH_NEWS_MAX_BYTES=524288000 \(500 MiB\)/,
  );
}, 90_000);

test('a stream size below 1 MiB is refused as a typo', async () => {
  await expect(startTestGateway({ ...env.env, MESH_NEWS_MAX_BYTES: '1000' })).rejects.toThrow(/MESH_NEWS_MAX_BYTES must be a number ≥ 1048576/);
});

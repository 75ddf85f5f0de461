import { beforeAll, expect, test } from 'vitest';
import { COMPOSITION_STALE_MS } from '../../src/server/health.js';
import { useGateway } from '../fixtures/gateway.js';
import { eventually } from '../fixtures/live.js';
import { useNatsServer } from '../fixtures/nats-server.js';

// NATS of this file's own: the test stops it.
const nats = useNatsServer();
const { gw: gateway, env } = useGateway('ready', { env: () => ({ NATS_URL: nats.url }) });
let origin: string;
beforeAll(() => {
  origin = new URL(gateway.url).origin;
});

const probe = async (path: string) => {
  const response = await fetch(`${origin}${path}`);
  return { status: response.status, body: (await response.json()) as any };
};

test('/ready answers 200 naming each check once the store answers, NATS is connected and a composition was heard; /health says only that the process serves', async () => {
  const ready = await eventually(async () => {
    const answer = await probe('/ready');
    return answer.status === 200 ? answer : undefined;
  }, 'a ready gateway');
  expect(ready.body).toMatchObject({
    ready: true,
    draining: false,
    checks: {
      store: { ok: true },
      nats: { ok: true, server: expect.stringContaining(String(nats.port)) },
      composition: { ok: true, seq: expect.any(Number), limitS: COMPOSITION_STALE_MS / 1000 },
    },
  });
  // Issue 34, finding 7: only that the process serves, no replica name nor uptime to an anonymous caller.
  const health = await probe('/health');
  expect(health.status).toBe(200);
  expect(health.body).toEqual({ ok: true });
});

test('with NATS down /ready answers 503 with the nats check failing, and 200 again once NATS is back', async () => {
  const restarted = nats.restart({ downMs: 4_000 });
  const down = await eventually(
    async () => {
      const answer = await probe('/ready');
      return answer.status === 503 ? answer : undefined;
    },
    'a 503 while NATS is down',
    4_000,
    50,
  );
  expect(down.body).toMatchObject({ ready: false, checks: { nats: { ok: false }, store: { ok: true } } });
  // The process is up all the same.
  expect((await probe('/health')).status).toBe(200);
  await restarted;
  await eventually(async () => (await probe('/ready')).status === 200, 'ready again after NATS came back', 20_000, 100);
});

// It takes the store away for good: only the drain test follows.
test('with the store gone /ready answers 503 with the store check failing and its reason', async () => {
  await env.database.drop();
  const down = await eventually(
    async () => {
      const answer = await fetch(`${origin}/ready`);
      const body = (await answer.json()) as any;
      return answer.status === 503 && body.checks.store?.ok === false ? body : undefined;
    },
    'the store check failing',
    10_000,
    100,
  );
  expect(down.checks.store.error).toEqual(expect.any(String));
});

test('a draining gateway answers /ready 503 at once, /health still 200 with nothing more', async () => {
  gateway.http.drain.begin();
  const ready = await probe('/ready');
  expect(ready.status).toBe(503);
  expect(ready.body).toMatchObject({ ready: false, draining: true });
  const health = await probe('/health');
  expect(health).toEqual({ status: 200, body: { ok: true } });
});

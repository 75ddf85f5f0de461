import { afterAll, expect, test } from 'vitest';
import { SILENT_AFTER_INTERVALS } from '../../../src/services/machines/machines.js';
import { anAgent, eventually } from '../../fixtures/live.js';
import { startTestGateway, type TestEnv, type TestGateway, testEnv } from '../../fixtures/services.js';

// Issue 37, found by trying it: a gateway restarted after every agent stopped (the news stream
// holding nothing newer than the re-read window) must compose, be ready and judge at now — not
// count the whole stream as unread news and show the mesh as it was when the agents stopped.

const HEARTBEAT_S = 1;
let env: TestEnv | undefined;
const gateways: TestGateway[] = [];
afterAll(async () => {
  for (const gw of gateways) await gw.stop().catch(() => undefined);
  await env?.cleanup();
});

const statusOf = async (gw: TestGateway) =>
  (await gw.gql('{ status { seq heardUntil machines { name state } } }')).data.status as {
    seq: number;
    heardUntil: string;
    machines: { name: string; state: string }[];
  };

test('a gateway restarted after the agents stopped, past the re-read window, composes at once, is ready and judges them at now: SILENT, not behind', async () => {
  env = await testEnv('quiet-restart');
  const vars = { ...env.env, MESH_HEARTBEAT_S: String(HEARTBEAT_S) };
  const first = await startTestGateway(vars);
  gateways.push(first);
  const agent = await anAgent();
  for (let i = 0; i < 3; i++) {
    agent.heartbeat(env.subjects, 'quiet-1', { site: 'eu-1', modules: ['broker'] });
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  await agent.close();
  await eventually(async () => (await statusOf(first)).machines.some((m) => m.name === 'quiet-1'), 'the machine heard');
  const lastSeq = (await statusOf(first)).seq;
  await first.stop();
  // Past the SILENT threshold and the re-read margin: nothing in the stream is newer than the window.
  await new Promise((resolve) => setTimeout(resolve, (SILENT_AFTER_INTERVALS + 2) * HEARTBEAT_S * 1000));

  const second = await startTestGateway(vars);
  gateways.push(second);
  const status = await eventually(async () => {
    const s = await statusOf(second);
    return s.seq > lastSeq ? s : undefined;
  }, 'a composition by the restarted gateway');
  expect(Date.now() - Date.parse(status.heardUntil)).toBeLessThan(3_000);
  expect(status.machines.find((m) => m.name === 'quiet-1')?.state).toBe('SILENT');
  const ready = await fetch(new URL('/ready', second.url));
  expect(ready.status).toBe(200);
  expect(((await ready.json()) as { checks: { news: { pending: number } } }).checks.news.pending).toBe(0);
});

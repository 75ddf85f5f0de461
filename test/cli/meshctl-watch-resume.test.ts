import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { anAgent, eventually } from '../fixtures/live.js';
import { collectJsonLines, MESHCTL_BUNDLE } from '../fixtures/meshctl.js';
import { startTestGateway, type TestEnv, type TestGateway, testEnv } from '../fixtures/services.js';

let env: TestEnv;
let gateway: TestGateway | undefined;
let agent: Awaited<ReturnType<typeof anAgent>>;

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

beforeAll(async () => {
  env = await testEnv('watch_resume');
  env.env.PORT = String(await freePort());
  agent = await anAgent();
});
afterAll(async () => {
  await gateway?.stop();
  await agent?.close();
  await env?.cleanup();
});

type Line = { statusChanges: { seq: number; baseSeq: number | null; full: unknown } };

test('meshctl status --watch, its gateway restarted, resumes with the deltas since the seq it held, not the whole mesh', async () => {
  gateway = await startTestGateway(env.env);
  agent.heartbeat(env.subjects, 'w-1', { site: 'eu-1', modules: ['broker'] });
  await eventually(() => gateway!.mesh.status.current()?.machines.some((m) => m.name === 'w-1'), 'w-1 composed');
  const child = spawn(process.execPath, [MESHCTL_BUNDLE, '--json', 'status', '--watch'], {
    env: { ...process.env, MESH_URL: gateway.url },
  });
  const lines: Line[] = [];
  collectJsonLines(child.stdout, lines);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    await eventually(() => lines.length >= 1, 'the first composition', 30_000);
    expect(lines[0].statusChanges.full).not.toBeNull();
    await gateway.stop();
    const held = lines.at(-1)!.statusChanges.seq;
    const before = lines.length;

    // The same address, another process: it reads the stream, takes the lease, composes on.
    gateway = await startTestGateway(env.env);
    agent.heartbeat(env.subjects, 'w-2', { site: 'eu-2', modules: ['agent'] });
    await eventually(() => gateway!.mesh.status.current()?.machines.some((m) => m.name === 'w-2'), 'w-2 composed');
    await eventually(() => lines.length > before && lines.at(-1)!.statusChanges.seq === gateway!.mesh.status.current()!.seq, 'the watcher to catch up', 30_000);
    const after = lines.slice(before).map((l) => l.statusChanges);
    expect(after.every((c) => c.full === null)).toBe(true);
    expect(after[0].baseSeq).toBe(held);
  } finally {
    child.kill('SIGINT');
    await exited;
  }
}, 90_000);

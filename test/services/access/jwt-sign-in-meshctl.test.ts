import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useGateway } from '../../fixtures/gateway.js';
import { aJwksFile, aJwtOf, aSigningKey, type SigningKey } from '../../fixtures/jwks.js';
import { anAgent, eventually } from '../../fixtures/live.js';
import { collectJsonLines, MESHCTL_BUNDLE } from '../../fixtures/meshctl.js';

// meshctl signed in with a JWT (MESH_TOKEN, or MESH_TOKEN_FILE that a sign-in agent refreshes) while
// its token expires: the part of jwt-sign-in.test.ts that waits out tokens' lifetimes, in a file of
// its own so that it runs beside the rest.

let first: SigningKey;
let jwks: ReturnType<typeof aJwksFile>;
let dir: string;
beforeAll(async () => {
  first = await aSigningKey('first');
  jwks = aJwksFile([first]);
  dir = dirname(jwks.path);
});
afterAll(() => jwks?.remove());
const { gw, env } = useGateway('jwt_meshctl', { env: () => jwks.env });

/** `meshctl --json status --watch` as a child, with its lines as they come and its exit. */
function watchWith(env: Record<string, string>) {
  const child = spawn(process.execPath, [MESHCTL_BUNDLE, '--json', 'status', '--watch'], {
    env: { ...process.env, MESH_URL: gw.url, MESH_TOKEN: '', MESH_TOKEN_FILE: '', ...env },
  });
  const lines: { statusChanges: { seq: number; baseSeq: number | null; full: unknown } }[] = [];
  let stderr = '';
  collectJsonLines(child.stdout, lines);
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, lines, exited, stderr: () => stderr };
}

describe('meshctl status --watch signed in with a JWT', () => {
  let agent: Awaited<ReturnType<typeof anAgent>>;
  beforeAll(async () => {
    agent = await anAgent();
  });
  afterAll(() => agent?.close());

  test('whose token (MESH_TOKEN_FILE) expires and is refreshed resumes with after: and loses no composition', async () => {
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, await aJwtOf(first, { scope: 'read' }, { expiresInS: 8 }));
    let connections = 0;
    gw.http.wss.on('connection', () => connections++);
    const watcher = watchWith({ MESH_TOKEN_FILE: tokenFile });
    try {
      await eventually(() => watcher.lines.length >= 1, 'the first composition', 30_000);
      // A sign-in agent refreshes the file before the old token expires; the socket keeps the old one until then.
      writeFileSync(tokenFile, await aJwtOf(first, { scope: 'read' }, { expiresInS: 600 }));
      const before = watcher.lines.length;
      agent.heartbeat(env.subjects, 'jwt-watch-1', { site: 'eu-1', modules: ['broker'] });
      await eventually(() => gw.mesh.status.current()?.machines.some((m) => m.name === 'jwt-watch-1'), 'jwt-watch-1 composed', 30_000);
      await eventually(() => watcher.lines.at(-1)?.statusChanges.seq === gw.mesh.status.current()?.seq, 'the watcher to catch up', 30_000);
      // At the first token's expiry the socket is closed 4403; meshctl opens another with the fresh token.
      await eventually(() => connections >= 2, 'meshctl to reconnect after its token expired', 30_000);
      agent.heartbeat(env.subjects, 'jwt-watch-2', { site: 'eu-2', modules: ['broker'] });
      await eventually(() => gw.mesh.status.current()?.machines.some((m) => m.name === 'jwt-watch-2'), 'jwt-watch-2 composed', 30_000);
      await eventually(
        () => watcher.lines.at(-1)?.statusChanges.seq === gw.mesh.status.current()?.seq,
        'the watcher to catch up after its reconnection',
        60_000,
      );
      const after = watcher.lines.slice(before).map((l) => l.statusChanges);
      // Each line continues from the one before it: nothing lost, nothing sent whole again.
      for (const [i, change] of after.entries()) {
        expect(change.full).toBeNull();
        expect(change.baseSeq).toBe(i === 0 ? watcher.lines[before - 1]!.statusChanges.seq : after[i - 1]!.seq);
      }
      expect(watcher.child.exitCode).toBeNull();
    } finally {
      watcher.child.kill('SIGINT');
      await watcher.exited;
    }
  }, 120_000);

  test('whose MESH_TOKEN expires ends with the reason (exit 1) rather than retrying a token that cannot work', async () => {
    // Long enough for meshctl to start and show a composition on a loaded machine (the whole suite
    // at once): with 5 s it once started after its token had expired, and showed none.
    const watcher = watchWith({ MESH_TOKEN: await aJwtOf(first, { scope: 'read' }, { expiresInS: 12 }) });
    try {
      await eventually(() => watcher.lines.length >= 1, 'the first composition', 30_000);
      expect(await watcher.exited).toBe(1);
      expect(watcher.stderr()).toMatch(/4403: Forbidden: the token expired at \d{4}-/);
    } finally {
      watcher.child.kill('SIGINT');
    }
  }, 60_000);
});

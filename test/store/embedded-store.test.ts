import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { openStore } from '../../src/store/db.js';
import { spawnGateway } from '../fixtures/child.js';
import { eventually } from '../fixtures/live.js';
import { type TestEnv, testEnv } from '../fixtures/services.js';

// The embedded store (PGlite in MESH_DATA_DIR/pg), as `npm ci && npm start` gives it: a gateway's
// first start, and the lock that keeps a second process out of its folder.

let env: TestEnv;
beforeAll(async () => {
  env = await testEnv('embedded');
});
afterAll(async () => {
  await env?.cleanup();
});

test('with no DATABASE_URL the gateway runs on embedded PGlite under MESH_DATA_DIR, and SIGTERM stops it cleanly', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'mesh-pglite-'));
  try {
    // PGlite's first start runs initdb in WebAssembly: seconds on a busy two-core machine.
    const child = await spawnGateway({ ...env.env, DATABASE_URL: '', MESH_DATA_DIR: dataDir, PORT: '0' }, 120_000);
    const response = await fetch(child.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ seats { name } }' }),
    });
    const { data } = (await response.json()) as { data: { seats: { name: string }[] } };
    expect(data.seats.map((s) => s.name)).toContain(env.controller);
    expect(child.output()).toContain(`pglite ${dataDir}/pg`);
    expect(await child.kill('SIGTERM')).toBe(0);
    expect(child.output()).toContain('"signal":"SIGTERM"');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}, 180_000);

test('a second gateway on the same embedded store is refused with the folder and the other process named', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-lock-'));
  const first = await openStore({ databaseUrl: undefined, dataDir: dir });
  try {
    // The lock is per process: another live process holds it, as a second `npm start` would find.
    await first.destroy();
    const holder = spawn(process.execPath, [
      '-e',
      `require('fs').writeFileSync(${JSON.stringify(join(dir, 'pg.lock'))}, JSON.stringify({ pid: process.pid, host: require('os').hostname(), since: new Date().toISOString() })); setTimeout(() => {}, 20000)`,
    ]);
    try {
      await eventually(() => holder.pid && existsSync(join(dir, 'pg.lock')), 'the other process holds the lock');
      await expect(openStore({ databaseUrl: undefined, dataDir: dir })).rejects.toThrow(
        new RegExp(`the embedded store ${join(dir, 'pg')} is in use by process ${holder.pid}`),
      );
    } finally {
      holder.kill('SIGKILL');
    }
    // Its process gone, the lock it left is taken over.
    await eventually(() => holder.exitCode !== null || holder.signalCode !== null, 'the holder gone');
    const again = await openStore({ databaseUrl: undefined, dataDir: dir });
    await again.destroy();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

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
/**
 * The folder the first start makes, which the lock's test opens again: PGlite's initdb, in
 * WebAssembly, is 7 CPU-seconds of its own, so it runs once here (where a gateway's first start
 * needs it), not twice. On its own, the lock's test makes the folder itself.
 */
let dataDir: string;
beforeAll(async () => {
  env = await testEnv('embedded');
  dataDir = mkdtempSync(join(tmpdir(), 'mesh-pglite-'));
});
afterAll(async () => {
  await env?.cleanup();
  rmSync(dataDir, { recursive: true, force: true });
});

test('with no DATABASE_URL the gateway runs on embedded PGlite under MESH_DATA_DIR, and SIGTERM stops it cleanly', async () => {
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
}, 180_000);

test('a second gateway on the same embedded store is refused with the folder and the other process named', async () => {
  // The folder the first start left; made here only when this test runs alone (each PGlite open in
  // this process is WebAssembly loaded and started again: seconds of CPU).
  if (!existsSync(join(dataDir, 'pg', 'PG_VERSION'))) await (await openStore({ databaseUrl: undefined, dataDir })).destroy();
  // The lock is per process: another live process holds it, as a second `npm start` would find.
  // Written whole and then put in place, as a gateway writes it: a file seen created but not yet
  // written reads as one a crash left half-written, and is taken over.
  const lock = JSON.stringify(join(dataDir, 'pg.lock'));
  const holder = spawn(process.execPath, [
    '-e',
    `const fs = require('fs'); fs.writeFileSync(${lock} + '.holder', JSON.stringify({ pid: process.pid, host: require('os').hostname(), since: new Date().toISOString() })); fs.renameSync(${lock} + '.holder', ${lock}); setTimeout(() => {}, 20000)`,
  ]);
  try {
    await eventually(() => holder.pid && existsSync(join(dataDir, 'pg.lock')), 'the other process holds the lock');
    await expect(openStore({ databaseUrl: undefined, dataDir })).rejects.toThrow(
      new RegExp(`the embedded store ${join(dataDir, 'pg')} is in use by process ${holder.pid}`),
    );
  } finally {
    holder.kill('SIGKILL');
  }
  // Its process gone, the lock it left is taken over.
  await eventually(() => holder.exitCode !== null || holder.signalCode !== null, 'the holder gone');
  const again = await openStore({ databaseUrl: undefined, dataDir });
  await again.destroy();
}, 60_000);

import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { type Builder, buildIfStale, PARTS, type PartName, staleness } from '../../scripts/build-if-stale.mjs';

// The rule `npm start` builds by (scripts/build-if-stale.mjs), on a small tree of its own with
// builders that only write what a build makes: never the repository's dist/, which other runs use.
let root: string;
let runs: PartName[];
/** The gateway's module the fake dashboard bundles, as Vite answers the delta algebra. */
const BUNDLED = 'src/services/status/delta/algebra.ts';

const write = (path: string, text = path) => {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), text);
};
/** A source edited later: its modification time a minute on (a second edit within a millisecond must count too). */
let later = Date.now() / 1000;
const touch = (path: string) => {
  later += 60;
  utimesSync(join(root, path), later, later);
};
const builders: Record<PartName, Builder> = {
  gateway: () => {
    runs.push('gateway');
    write(PARTS.gateway.made);
  },
  dashboard: () => {
    runs.push('dashboard');
    write(PARTS.dashboard.made);
    return ['dashboard/src/main.ts', BUNDLED];
  },
};
/** One start: the parts it built. */
const start = async () => {
  runs = [];
  await buildIfStale(root, { builders, log: () => {} });
  return runs;
};

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'build-if-stale-'));
  for (const path of ['src/main.ts', 'src/server/http.ts', BUNDLED, 'migrations/0001.ts', 'tsconfig.json', 'package-lock.json']) write(path);
  for (const path of ['dashboard/index.html', 'dashboard/src/main.ts', 'dashboard/vite.config.ts']) write(path);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

test('a fresh tree builds both parts; a second start builds nothing', async () => {
  expect(staleness(root, 'gateway')).toBe('dist/src/main.js is missing');
  expect(await start()).toEqual(['gateway', 'dashboard']);
  expect(staleness(root, 'gateway')).toBeUndefined();
  expect(staleness(root, 'dashboard')).toBeUndefined();
  expect(await start()).toEqual([]);
});

test('a source touched rebuilds the part built from it, and only that part', async () => {
  await start();
  touch('src/server/http.ts');
  expect(staleness(root, 'gateway')).toBe('src/server/http.ts changed');
  expect(await start()).toEqual(['gateway']);
  touch('dashboard/src/main.ts');
  expect(await start()).toEqual(['dashboard']);
  // A module of the gateway the dashboard bundles is a source of both.
  touch(BUNDLED);
  expect(await start()).toEqual(['gateway', 'dashboard']);
  // A file tsc does not read (a folder's README) is no source of the gateway.
  write('src/server/README.md');
  expect(await start()).toEqual([]);
  touch('package-lock.json');
  expect(await start()).toEqual(['gateway', 'dashboard']);
  expect(await start()).toEqual([]);
});

test('a source added or removed, or a changed size at the same time, is stale too; so is a build removed', async () => {
  await start();
  write('migrations/0002.ts');
  expect(staleness(root, 'gateway')).toBe('migrations/0002.ts is new');
  expect(await start()).toEqual(['gateway']);
  rmSync(join(root, 'src/main.ts'));
  expect(staleness(root, 'gateway')).toBe('src/main.ts is gone');
  expect(await start()).toEqual(['gateway']);
  touch('src/server/http.ts');
  await start();
  write('src/server/http.ts', 'a longer text than the one before');
  utimesSync(join(root, 'src/server/http.ts'), later, later);
  expect(await start()).toEqual(['gateway']);
  rmSync(join(root, PARTS.dashboard.made));
  expect(await start()).toEqual(['dashboard']);
});

test('a failed build leaves no record: the next start builds again', async () => {
  await start();
  touch('src/main.ts');
  await expect(
    buildIfStale(root, {
      builders: {
        gateway: () => {
          throw new Error('tsc failed (exit 2)');
        },
      },
      log: () => {},
    }),
  ).rejects.toThrow('tsc failed');
  expect(staleness(root, 'gateway')).toBe('no record of its last build');
  expect(await start()).toEqual(['gateway']);
});

test('`always` builds the parts named, stale or not', async () => {
  await start();
  runs = [];
  await buildIfStale(root, { names: ['dashboard'], always: true, builders, log: () => {} });
  expect(runs).toEqual(['dashboard']);
});

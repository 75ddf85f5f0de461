import { existsSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type InlineConfig } from 'vite';
import { GATEWAY_BUILD } from './fixtures/child.js';
import { TEST_BUILD } from './fixtures/test-build.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);

/** What Vite's build takes as `rollupOptions`: the input and how the output is laid out. */
type RollupOptions = NonNullable<NonNullable<InlineConfig['build']>['rollupOptions']>;

/** Every migration's source: the store reads them from disk, so each build carries them beside the gateway. */
const migrationSources = (): string[] =>
  readdirSync(join(ROOT, 'migrations'))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(ROOT, 'migrations', f));

/**
 * Builds for Node into a clean `outDir` with Vite: ES modules, unminified, for Node 20. Vite's build
 * sets NODE_ENV to production in the process that calls it, where every process it starts
 * afterwards would inherit it: it is put back.
 */
async function buildForNode(outDir: string, rollupOptions: RollupOptions, config: Pick<InlineConfig, 'resolve' | 'ssr'> = {}): Promise<void> {
  rmSync(outDir, { recursive: true, force: true });
  const nodeEnv = process.env.NODE_ENV;
  await build({
    ...config,
    configFile: false,
    logLevel: 'warn',
    root: ROOT,
    build: { ssr: true, outDir, emptyOutDir: false, minify: false, sourcemap: false, target: 'node20', rollupOptions },
  }).finally(() => {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
  });
}

/**
 * Compiles `entries` and everything they import, with every migration, into `outDir`, one module
 * per source file: each module keeps its place beside migrations/ and the dashboard, which three
 * modules find from their own address, as they do in dist/src. Node runs the result without tsx.
 * Answers where `entries[0]` was compiled to.
 */
export async function compileModules(entries: string[], outDir: string): Promise<string> {
  await buildForNode(outDir, {
    input: [...entries, ...migrationSources()],
    output: { format: 'es', preserveModules: true, preserveModulesRoot: ROOT, entryFileNames: '[name].js' },
  });
  return join(outDir, entries[0]!.slice(ROOT.length).replace(/\.ts$/, '.js'));
}

/** Where a bundle's entry sits under its folder: at the depth of src/<area>/<module>.js (below). */
const BUNDLE_ENTRY = 'src/bundle/main';

/**
 * Bundles `entry` with the packages it imports into `outDir`/src/bundle/main.js, and every migration
 * into `outDir`/migrations/ (sharing Kysely with the bundle). Node starts one bundle in 0.68 CPU-s
 * where the modules and their packages took 1.91 (docs/BENCHMARKS.md, "A child gateway's start").
 * Three modules find migrations/ and the dashboard two folders above their own file (src/store/
 * migrate.ts), so the bundle sits two folders deep too. PGlite stays a package: it reads its
 * WebAssembly from beside its own module. graphql is taken from its CommonJS files alone, as Node
 * hands it to every package; bundled from both its ES and its CommonJS files, a schema would be
 * "from another realm". Answers the bundle's path.
 */
export async function bundleGateway(entry: string, outDir: string): Promise<string> {
  const input: Record<string, string> = { [BUNDLE_ENTRY]: entry };
  for (const migration of migrationSources()) input[`migrations/${basename(migration, '.ts')}`] = migration;
  const graphql = dirname(require.resolve('graphql'));
  await buildForNode(
    outDir,
    { input, output: { format: 'es', entryFileNames: '[name].js', chunkFileNames: 'src/bundle/[name]-[hash].js' } },
    {
      resolve: {
        alias: [
          { find: /^graphql$/, replacement: join(graphql, 'index.js') },
          { find: /^graphql\/(.*?)(\.m?js)?$/, replacement: `${graphql}/$1.js` },
        ],
      },
      ssr: { noExternal: true, external: ['@electric-sql/pglite'] },
    },
  );
  return join(outDir, `${BUNDLE_ENTRY}.js`);
}

/** Whether a process of this id is running (a run's folder is named after vitest's main process). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The folders of runs that ended without their teardown (killed, interrupted): their vitest process
 * is gone. Only folders named as runs are (a process id): with MESH_TEST_BUILD_DIR set to a folder
 * beside others (`/work/build-x`), every sibling was once removed, the checkout among them.
 */
function removeDeadRuns(): void {
  const runs = dirname(TEST_BUILD);
  if (!existsSync(runs)) return;
  for (const run of readdirSync(runs)) {
    if (/^[0-9]+$/.test(run) && !alive(Number(run))) rmSync(join(runs, run), { recursive: true, force: true });
  }
}

/**
 * vitest's global setup: bundles the gateway (src/main.ts) into GATEWAY_BUILD at every run (about
 * a second and a half), so that the child gateways the tests start (a few dozen; sigkill alone
 * restarts ten) run the source as it is now, without tsx and without loading a thousand modules of
 * packages at each start. The run's folder (TEST_BUILD, meshctl's bundle beside) is its own and
 * is removed after it.
 */
export default async function setup(): Promise<() => void> {
  removeDeadRuns();
  await bundleGateway(join(ROOT, 'src/main.ts'), GATEWAY_BUILD);
  // The gateway serves dist/dashboard (test/build-dashboard.ts builds it) from beside its sources.
  symlinkSync(join(ROOT, 'dist/dashboard'), join(GATEWAY_BUILD, 'dashboard'), 'dir');
  return () => rmSync(TEST_BUILD, { recursive: true, force: true });
}

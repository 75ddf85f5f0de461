import { readdirSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import { GATEWAY_BUILD } from './fixtures/child.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);

/**
 * Compiles `entries` and everything they import, with every migration (the store reads them from
 * disk), into `outDir`, one module per source file: each module keeps its place beside migrations/
 * and the dashboard, which three modules find from their own address, as they do in dist/src. Node
 * runs the result without tsx. Answers where `entries[0]` was compiled to.
 */
export async function compileModules(entries: string[], outDir: string): Promise<string> {
  rmSync(outDir, { recursive: true, force: true });
  const migrations = readdirSync(join(ROOT, 'migrations'))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(ROOT, 'migrations', f));
  // Vite's build sets NODE_ENV to production in the process that calls it, where every process it
  // starts afterwards would inherit it.
  const nodeEnv = process.env.NODE_ENV;
  await build({
    configFile: false,
    logLevel: 'warn',
    root: ROOT,
    build: {
      ssr: true,
      outDir,
      emptyOutDir: false,
      minify: false,
      sourcemap: false,
      target: 'node20',
      rollupOptions: {
        input: [...entries, ...migrations],
        output: { format: 'es', preserveModules: true, preserveModulesRoot: ROOT, entryFileNames: '[name].js' },
      },
    },
  }).finally(() => {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
  });
  return join(outDir, entries[0]!.slice(ROOT.length).replace(/\.ts$/, '.js'));
}

/** Where a bundle's entry sits under its folder: at the depth of src/<area>/<module>.js (below). */
const BUNDLE_ENTRY = 'src/bundle/main';

/**
 * Bundles `entry` with the packages it imports into `outDir`/src/bundle/main.js, and every migration
 * into `outDir`/migrations/ (sharing Kysely with the bundle). Node starts one bundle in 0.75 CPU-s
 * where the modules and their packages took 2.05 (docs/BENCHMARKS.md, "A child gateway's start").
 * Three modules find migrations/ and the dashboard two folders above their own file (src/store/
 * migrate.ts), so the bundle sits two folders deep too. PGlite stays a package: it reads its
 * WebAssembly from beside its own module. graphql is taken from its CommonJS files alone, as Node
 * hands it to every package; bundled from both its ES and its CommonJS files, a schema would be
 * "from another realm". Answers the bundle's path.
 */
export async function bundleGateway(entry: string, outDir: string): Promise<string> {
  rmSync(outDir, { recursive: true, force: true });
  const input: Record<string, string> = { [BUNDLE_ENTRY]: entry };
  for (const file of readdirSync(join(ROOT, 'migrations')).filter((f) => f.endsWith('.ts'))) {
    input[`migrations/${file.replace(/\.ts$/, '')}`] = join(ROOT, 'migrations', file);
  }
  const graphql = dirname(require.resolve('graphql'));
  const nodeEnv = process.env.NODE_ENV;
  await build({
    configFile: false,
    logLevel: 'warn',
    root: ROOT,
    resolve: {
      alias: [
        { find: /^graphql$/, replacement: join(graphql, 'index.js') },
        { find: /^graphql\/(.*?)(\.m?js)?$/, replacement: `${graphql}/$1.js` },
      ],
    },
    ssr: { noExternal: true, external: ['@electric-sql/pglite'] },
    build: {
      ssr: true,
      outDir,
      emptyOutDir: false,
      minify: false,
      sourcemap: false,
      target: 'node20',
      rollupOptions: { input, output: { format: 'es', entryFileNames: '[name].js', chunkFileNames: 'src/bundle/[name]-[hash].js' } },
    },
  }).finally(() => {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
  });
  return join(outDir, `${BUNDLE_ENTRY}.js`);
}

/**
 * vitest's global setup: bundles the gateway (src/main.ts) into GATEWAY_BUILD at every run (about
 * a second and a half), so that the child gateways the tests start (a few dozen; sigkill alone
 * restarts ten) run the source as it is now, without tsx and without loading a thousand modules of
 * packages at each start.
 */
export default async function setup(): Promise<void> {
  await bundleGateway(join(ROOT, 'src/main.ts'), GATEWAY_BUILD);
  // The gateway serves dist/dashboard (test/build-dashboard.ts builds it) from beside its sources.
  symlinkSync(join(ROOT, 'dist/dashboard'), join(GATEWAY_BUILD, 'dashboard'), 'dir');
}

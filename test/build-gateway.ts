import { readdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import { GATEWAY_BUILD } from './fixtures/child.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

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

/**
 * vitest's global setup: compiles the gateway (src/main.ts) into GATEWAY_BUILD at every run (half a
 * second), so that the child gateways the tests start (a few dozen; sigkill alone restarts ten) run
 * the source as it is now without loading tsx each time (1.5 s and more of CPU a start).
 */
export default async function setup(): Promise<void> {
  await compileModules([join(ROOT, 'src/main.ts')], GATEWAY_BUILD);
  // The gateway serves dist/dashboard (test/build-dashboard.ts builds it) from beside its sources.
  symlinkSync(join(ROOT, 'dist/dashboard'), join(GATEWAY_BUILD, 'dashboard'), 'dir');
}

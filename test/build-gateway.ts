import { readdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import { GATEWAY_BUILD } from './fixtures/child.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * vitest's global setup: compiles the gateway (src/main.ts and every migration) into GATEWAY_BUILD
 * at every run, one module per source file, so that the child gateways the tests start (a few dozen,
 * sigkill alone restarts ten) run the source as it is now without loading tsx each time (1.5 s and
 * more of CPU a start). Module for module, so each keeps its place beside migrations/ and the
 * dashboard, which three modules find from their own address, as they do in dist/src.
 */
export default async function setup(): Promise<void> {
  rmSync(GATEWAY_BUILD, { recursive: true, force: true });
  const migrations = readdirSync(join(ROOT, 'migrations'))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(ROOT, 'migrations', f));
  await build({
    configFile: false,
    logLevel: 'warn',
    root: ROOT,
    build: {
      ssr: true,
      outDir: GATEWAY_BUILD,
      emptyOutDir: false,
      minify: false,
      sourcemap: false,
      target: 'node20',
      rollupOptions: {
        input: [join(ROOT, 'src/main.ts'), ...migrations],
        output: { format: 'es', preserveModules: true, preserveModulesRoot: ROOT, entryFileNames: '[name].js' },
      },
    },
  });
  // The gateway serves dist/dashboard (test/build-dashboard.ts builds it) from beside its sources.
  symlinkSync(join(ROOT, 'dist/dashboard'), join(GATEWAY_BUILD, 'dashboard'), 'dir');
}

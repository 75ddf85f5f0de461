import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import { MESHCTL_BUNDLE } from './fixtures/meshctl.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * vitest's global setup: bundles meshctl (src/cli/main.ts, its packages left as imports) into
 * MESHCTL_BUNDLE (in the run's own folder, test/fixtures/test-build.ts) at every run, so the CLI tests run the source as it is now without loading tsx
 * at each of their hundred-odd runs (a second and more of CPU each).
 */
export default async function setup(): Promise<void> {
  await build({
    configFile: false,
    logLevel: 'warn',
    root: ROOT,
    build: {
      ssr: join(ROOT, 'src/cli/main.ts'),
      outDir: dirname(MESHCTL_BUNDLE),
      emptyOutDir: false,
      minify: false,
      sourcemap: false,
      rollupOptions: { output: { entryFileNames: basename(MESHCTL_BUNDLE), format: 'es' } },
    },
  });
}

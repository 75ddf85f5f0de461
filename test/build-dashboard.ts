import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BUILT = join(ROOT, 'dist/dashboard/index.html');

/** The newest modification time under a folder. */
function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

/** What the page is built from: its own folder and the gateway's pure code it imports (the delta algebra, the domain errors). */
const SOURCES = ['dashboard', 'src/services/status/delta', 'src/kernel/errors.ts'];

/** The newest modification time of a file, or of any file under a folder. */
const newestOf = (path: string): number => (statSync(path).isDirectory() ? newest(path) : statSync(path).mtimeMs);

/** vitest's global setup: the gateway serves dist/dashboard at `/`, so the tests build it first when it is missing or older than its sources. */
export default async function setup(): Promise<void> {
  if (existsSync(BUILT) && statSync(BUILT).mtimeMs >= Math.max(...SOURCES.map((source) => newestOf(join(ROOT, source))))) return;
  await build({ configFile: join(ROOT, 'dashboard/vite.config.ts') });
}

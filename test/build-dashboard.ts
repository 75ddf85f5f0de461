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

/** vitest's global setup: the gateway serves dist/dashboard at `/`, so the tests build it first when it is missing or older than its sources. */
export default async function setup(): Promise<void> {
  if (existsSync(BUILT) && statSync(BUILT).mtimeMs >= newest(join(ROOT, 'dashboard'))) return;
  await build({ configFile: join(ROOT, 'dashboard/vite.config.ts') });
}

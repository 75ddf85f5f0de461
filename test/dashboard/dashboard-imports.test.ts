import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

// The page bundles what it imports from outside dashboard/: the pure delta algebra and the typed
// errors it throws, nothing of the gateway besides (no Node, no NATS, no store). The algebra's own
// imports are held to the same by .dependency-cruiser.cjs (`delta-algebra-is-pure`).

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ALLOWED = [
  'src/services/status/delta/algebra.ts',
  'src/services/status/delta/lists.ts',
  'src/services/status/delta/delta-chain.ts',
  'src/kernel/errors.ts',
];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g;

test('the dashboard imports from outside dashboard/ only the delta algebra and the kernel errors', () => {
  const outside = new Set<string>();
  for (const file of sources(join(ROOT, 'dashboard/src'))) {
    for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2]!;
      if (!specifier.startsWith('.')) continue; // an npm package (graphql-ws), bundled as the page needs it
      const target = relative(ROOT, resolve(dirname(file), specifier)).replace(/\.js$/, '.ts');
      if (!target.startsWith('dashboard/')) outside.add(target);
    }
  }
  expect(outside.size).toBeGreaterThan(0);
  for (const target of outside) expect(ALLOWED, target).toContain(target);
});

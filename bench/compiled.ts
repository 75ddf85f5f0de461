import { execFileSync } from 'node:child_process';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Runs `calls` (ES module statements; `builder` is test/build-gateway.ts) through tsx in a process of
 * its own and answers the lines they printed. Run in a bench's process, a Vite build left it (and
 * the load it makes with autocannon) at half its rate.
 */
export function runBuilder(calls: string): string[] {
  const builder = pathToFileURL(join(ROOT, 'test/build-gateway.ts')).href;
  const script = `const builder = await import(${JSON.stringify(builder)});\n${calls}`;
  const output = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  return output.trim().split('\n');
}

/**
 * Compiles the bench file `entry` and everything it imports (the gateway's sources among them) into
 * dist/bench/<name>/ and answers the compiled file: its roles then run as `npm start` runs the
 * gateway, compiled JavaScript, not through tsx, whose transform names each closure as it is made
 * (`__name`, 1–2% of a kept `status` answer's CPU in its profile).
 */
export function compiledBench(entry: string): string {
  const name = relative(join(ROOT, 'bench'), entry).replace(/\.ts$/, '');
  return runBuilder(`console.log(await builder.compileModules(${JSON.stringify([entry])}, ${JSON.stringify(join(ROOT, 'dist/bench', name))}));`).at(-1)!;
}

/**
 * Bundles the gateway as vitest's global setup does for the tests (test/build-gateway.ts), so that a
 * bench starting child gateways (`spawnGateway`) runs the source as it is now, on a fresh clone too.
 */
export function bundledChildGateway(): void {
  runBuilder('await builder.default();');
}

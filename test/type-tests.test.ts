import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');
/** The files of type assertions (expectTypeOf, @ts-expect-error), and only what they import. */
const TYPE_TESTS_CONFIG = 'tsconfig.types.json';

// Type assertions bite in `vitest run` as well as in `npm run typecheck`: tsc checks the files
// TYPE_TESTS_CONFIG names, as a test beside the others. vitest's own typecheck did the same as a
// group of its own, which vitest runs after every other file: some 5 s alone at the end of the run.
test('every type assertion of the type tests holds (tsc over tsconfig.types.json)', async () => {
  const { code, output } = await new Promise<{ code: number | string | undefined; output: string }>((resolve) =>
    execFile(process.execPath, [TSC, '-p', TYPE_TESTS_CONFIG, '--noEmit', '--pretty', 'false'], { cwd: ROOT }, (error, stdout, stderr) =>
      resolve({ code: error ? (error.code ?? error.signal ?? 'failed') : 0, output: `${stdout}${stderr}` }),
    ),
  );
  expect(output).toBe('');
  expect(code).toBe(0);
}, 120_000);

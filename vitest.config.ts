import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

export default defineConfig({
  // graphql ships CJS (main) and ESM (module); Node hands the libraries the CJS one, so the tests
  // must get the same copy or schema objects come "from another realm".
  resolve: { alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }] },
  test: {
    include: ['test/**/*.test.ts'],
    // Builds the dashboard (dist/dashboard) when its sources are newer than the build: the gateway serves it at `/`.
    globalSetup: ['test/build-dashboard.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Type assertions (expectTypeOf, @ts-expect-error) bite in vitest as well as in `tsc`: a file
    // listed here is type-checked as a test of its own, and fails when one no longer holds.
    typecheck: { enabled: true, include: ['test/services/calls/verb-types.test.ts'], tsconfig: './tsconfig.types.json' },
    fileParallelism: true,
  },
});

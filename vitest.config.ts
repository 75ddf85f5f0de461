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
    fileParallelism: true,
  },
});

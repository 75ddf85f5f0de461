import { createRequire } from 'node:module';
import { relative } from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const require = createRequire(import.meta.url);

/**
 * The files that wait longest (a bad day's minute of silence, child gateways, meshctl runs),
 * slowest first. They start first, so the short files fill the other workers around them instead
 * of the suite ending on one of these alone; a file not listed keeps vitest's own order.
 */
const LONGEST_FIRST = [
  'test/mesh/bad-day.test.ts',
  'test/cli/meshctl.test.ts',
  'test/server/graceful-sigterm.test.ts',
  'test/mesh/sigkill.test.ts',
  'test/server/server.test.ts',
  'test/bus/cluster.test.ts',
  'test/mesh/restart.test.ts',
  'test/services/access/jwt-sign-in.test.ts',
  'test/dashboard/dashboard-browser.test.ts',
  'test/mesh/store-outage.test.ts',
  'test/cli/meshctl-follow.test.ts',
  'test/services/status/behind.test.ts',
];

/** vitest's order (by group, failed first, then longest by its cache), except that in each group LONGEST_FIRST goes before the rest. */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = LONGEST_FIRST.indexOf(relative(spec.project.config.root, spec.moduleId));
      return at === -1 ? LONGEST_FIRST.length : at;
    };
    const group = (spec: TestSpecification) => spec.project.config.sequence.groupOrder;
    return sorted
      .map((spec, i) => ({ spec, i }))
      .sort((a, b) => group(a.spec) - group(b.spec) || rank(a.spec) - rank(b.spec) || a.i - b.i)
      .map(({ spec }) => spec);
  }
}

/**
 * Files that run each in a process of their own: they set process-wide state (the OpenTelemetry
 * tracer provider, meshctl's output width) or kill, freeze and restart servers. Every other file
 * shares its worker's loaded modules with the files before it (isolate: false): loading the
 * gateway's modules again for each file cost more than most files' tests.
 * The bad day at scale (three replicas over 10,000 machines, judged to 2 s) ran last and alone
 * after it ran out of time beside the other files (240 s, when child gateways started through
 * tsx). Beside them now, it shows its stopped machines LATE and SILENT 0.25–0.5 s past their
 * boundaries, as it does alone (test/README.md). `sigkill` judges no timing.
 */
const OWN_PROCESS = [
  'test/mesh/bad-day.test.ts',
  'test/mesh/sigkill.test.ts',
  'test/mesh/restart.test.ts',
  'test/mesh/store-outage.test.ts',
  'test/bus/cluster.test.ts',
  'test/server/graceful-sigterm.test.ts',
  'test/server/tracing.test.ts',
  'test/cli/meshctl.test.ts',
];
const TYPE_TESTS = ['test/services/calls/verb-types.test.ts'];

export default defineConfig({
  // graphql ships CJS (main) and ESM (module); Node hands the libraries the CJS one, so the tests
  // must get the same copy or schema objects come "from another realm".
  resolve: { alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }] },
  test: {
    // Builds the dashboard (dist/dashboard) when its sources are newer than the build: the gateway
    // serves it at `/`; and meshctl into one file (dist/test/meshctl.mjs) that the CLI tests run.
    // And keeps one stream on the shared NATS server for the run (test/keep-jetstream-store.ts).
    globalSetup: ['test/build-dashboard.ts', 'test/build-meshctl.ts', 'test/build-gateway.ts', 'test/keep-jetstream-store.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Most tests wait (on NATS, timers, child processes) rather than compute, so three files run at
    // once even on two cores (vitest's default, cores - 1, would run them one at a time); four gave
    // 9 s of 223 for twice the contention (test/README.md).
    maxWorkers: 3,
    fileParallelism: true,
    sequence: { sequencer: LongestFirst },
    projects: [
      { extends: true, test: { name: 'own-process', include: OWN_PROCESS, isolate: true } },
      {
        extends: true,
        test: {
          name: 'shared',
          include: ['test/**/*.test.ts'],
          exclude: [...OWN_PROCESS, 'node_modules/**'],
          isolate: false,
          // Type assertions (expectTypeOf, @ts-expect-error) bite in vitest as well as in `tsc`: a file
          // listed here is type-checked as a test of its own, and fails when one no longer holds.
          typecheck: { enabled: true, include: TYPE_TESTS, tsconfig: './tsconfig.types.json' },
        },
      },
    ],
  },
});

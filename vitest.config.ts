import { createRequire } from 'node:module';
import { relative } from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const require = createRequire(import.meta.url);

/**
 * The bad day at scale starts first, in a process of its own, beside the others: its stopped
 * machines must be shown LATE within 2 s of their boundary while three replicas take 10,000
 * machines' beats. Every other file yields the CPU to it (test/yield-cpu.ts: nice 10, their
 * children too), so its replicas run as on a machine of their own while the others use what it
 * leaves: alone last, the suite's cores idled half of its 50 s.
 */
const BAD_DAY = 'test/mesh/bad-day.test.ts';
/**
 * The files that wait longest or work hardest (child gateways, meshctl runs, browsers), slowest
 * first. They start after the light files, so that the group does not end on one of them alone:
 * they run three at a time.
 */
const HEAVIEST_LAST = [
  'test/cli/meshctl.test.ts',
  'test/mesh/sigkill.test.ts',
  'test/dashboard/dashboard-lookback.test.ts',
  'test/server/graceful-sigterm.test.ts',
  'test/bus/cluster.test.ts',
  'test/dashboard/dashboard-browser.test.ts',
  'test/services/access/jwt-sign-in.test.ts',
  'test/services/status/operator-truth.test.ts',
  'test/store/embedded-store.test.ts',
  'test/server/graphiql-offline.test.ts',
  'test/services/status/behind.test.ts',
  'test/mesh/restart.test.ts',
];

/** vitest's order (by group, failed first, then longest by its cache), except that the bad day goes first and HEAVIEST_LAST after the rest. */
class HeaviestLast extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const path = relative(spec.project.config.root, spec.moduleId);
      if (path === BAD_DAY) return -1;
      const at = HEAVIEST_LAST.indexOf(path);
      return at === -1 ? 0 : 1 + at;
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
 * The bad day at scale has a project of its own, the one without test/yield-cpu.ts (BAD_DAY above).
 * `sigkill` judges no timing.
 */
const OWN_PROCESS = [
  'test/mesh/sigkill.test.ts',
  'test/mesh/restart.test.ts',
  'test/mesh/store-outage.test.ts',
  'test/bus/cluster.test.ts',
  'test/server/graceful-sigterm.test.ts',
  'test/server/tracing.test.ts',
  'test/cli/meshctl.test.ts',
];
/** Lowers the priority of every file but the bad day's (and of what it starts). */
const YIELD_CPU = 'test/yield-cpu.ts';
const TYPE_TESTS = ['test/services/verbs/verb-types.test.ts'];

export default defineConfig({
  // graphql ships CJS (main) and ESM (module); Node hands the libraries the CJS one, so the tests
  // must get the same copy or schema objects come "from another realm".
  resolve: { alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }] },
  test: {
    // Builds the dashboard (dist/dashboard) when its sources are newer than the build: the gateway
    // serves it at `/`; and meshctl into one file (dist/test/meshctl.mjs) that the CLI tests run.
    // And keeps one stream on the shared NATS server for the run (test/keep-jetstream-store.ts), and
    // one migrated database that each file's database is copied from (test/migrated-template.ts).
    globalSetup: ['test/build-dashboard.ts', 'test/build-meshctl.ts', 'test/build-gateway.ts', 'test/keep-jetstream-store.ts', 'test/migrated-template.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Most tests wait (on NATS, timers, child processes) rather than compute, so three files run at
    // once even on two cores (vitest's default, cores - 1, would run them one at a time); four gave
    // 9 s of 223 for twice the contention (test/README.md).
    maxWorkers: 3,
    fileParallelism: true,
    sequence: { sequencer: HeaviestLast },
    projects: [
      { extends: true, test: { name: 'own-process', include: OWN_PROCESS, isolate: true, setupFiles: [YIELD_CPU] } },
      { extends: true, test: { name: 'bad-day', include: [BAD_DAY], isolate: true } },
      {
        extends: true,
        test: {
          name: 'shared',
          include: ['test/**/*.test.ts'],
          exclude: [...OWN_PROCESS, BAD_DAY, 'node_modules/**'],
          isolate: false,
          setupFiles: [YIELD_CPU],
          // Type assertions (expectTypeOf, @ts-expect-error) bite in vitest as well as in `tsc`: a file
          // listed here is type-checked as a test of its own, and fails when one no longer holds.
          typecheck: { enabled: true, include: TYPE_TESTS, tsconfig: './tsconfig.types.json' },
        },
      },
    ],
  },
});

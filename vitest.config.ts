import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
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
 * The long files that mostly wait on the gateway's own clock (a NATS outage outlived, a claim that
 * lapses, a write retried, a frozen replica's heartbeats going SILENT) and use little CPU
 * meanwhile, longest first. Seconds are vitest's per-file times in a full run on a fresh machine
 * (2026-12-03, 305 s), then what the file's own waits were cut to since (docs/BENCHMARKS.md, "The
 * suite's timings"). They start beside the bad day and then one in every two of the files started,
 * so that at any moment about one worker waits on a clock while the others use the cores.
 */
const WAITING = [
  'test/services/status/takeover-after-nats-restart.test.ts', // 54 s: SILENT after 12 s, 12 s watched
  'test/services/hand-acts/outbox.test.ts', // 63 s, its tests' waits halved since: 3 s of KV retries, a 2 s claim
  'test/services/access/jwt-sign-in-meshctl.test.ts', // about 17 s: meshctl's tokens expiring (8 s, 5 s), once jwt-sign-in's
  'test/services/plans/plan-records-nats-away.test.ts', // 15 s
  'test/services/news/heard-time.test.ts', // 15 s
  'test/services/plans/applies-nats-restart.test.ts', // 13 s: NATS away 10 s
  'test/server/no-request-ends-it.test.ts', // 13 s, 6 s less since: its frames sent at once
  'test/services/status/composing-nats-away.test.ts', // 12 s: NATS away 6 s
  'test/store/idle-transaction.test.ts', // 9 s, 3 s less since: PostgreSQL's idle-in-transaction time-out
];
/**
 * The long files that work hardest (child gateways, meshctl runs, browsers, a NATS cluster, the
 * fuzzer), longest first. They start early, between the waiting ones, and the many short files
 * come last, so the run does not end on a long file alone. The NATS cluster's file (60 s) is two
 * since, each on a cluster of its own: the node loss about two thirds of it; jwt-sign-in's meshctl
 * part (two tokens waited out) is a waiting file of its own.
 */
const WORKING = [
  'test/bus/cluster-node-loss.test.ts', // about 40 s: a node and a gateway killed under load
  'test/dashboard/dashboard-lookback.test.ts', // 38 s
  'test/cli/meshctl.test.ts', // 35 s: a hundred meshctl processes
  'test/bus/cluster.test.ts', // about 25 s: the cluster's other tests
  'test/mesh/sigkill.test.ts', // 20 s: ten restarts; its last relay 8 s sooner since
  'test/dashboard/dashboard-browser.test.ts', // 22 s
  'test/services/access/jwt-door.test.ts', // 20 s: 10,000 bearers verified
  'test/fuzz/doors.test.ts', // 17 s: two gateways fuzzed 12 s each
  'test/services/access/jwt-sign-in.test.ts', // about 12 s: 27 s with meshctl's part
  'test/server/graphiql-offline.test.ts', // about 10 s
  'test/store/embedded-store.test.ts', // 9 s: PGlite's initdb
  'test/services/status/status-stream-sealed.test.ts', // 9 s, its gzip bomb 4 s less since
  'test/server/graceful-sigterm.test.ts', // 8 s
  'test/services/status/operator-truth.test.ts', // 8 s
  'test/services/status/behind.test.ts', // 8 s
  'test/mesh/restart.test.ts', // 7 s
];
/** The bad day, then the waiting and the working files alternately (each list longest first), then the rest. */
const FIRST = [BAD_DAY, ...Array.from({ length: Math.max(WAITING.length, WORKING.length) }, (_, i) => [WAITING[i], WORKING[i]]).flat()].filter(
  (path): path is string => path !== undefined,
);

/** vitest's order (by group, failed first, then longest by its cache, or largest), except that FIRST goes first, in its order. */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = FIRST.indexOf(relative(spec.project.config.root, spec.moduleId));
      return at === -1 ? FIRST.length : at;
    };
    const group = (spec: TestSpecification) => spec.project.config.sequence.groupOrder;
    return sorted
      .map((spec, i) => ({ spec, i }))
      .sort((a, b) => group(a.spec) - group(b.spec) || rank(a.spec) - rank(b.spec) || a.i - b.i)
      .map(({ spec }) => spec);
  }
}

/**
 * Files a core runs at once. Most files wait (on NATS, timers, child processes) rather than compute:
 * with four files on two cores the cores idled a quarter of the run (188.7 s, 76% busy), with six
 * 8% (149.1 s); on a slow day (2026-12-03, page faults five times dearer) six tied with four, so more
 * never cost the run (docs/BENCHMARKS.md, "The suite at three files a core").
 */
const FILES_PER_CORE = 3;
/** Files at once: FILES_PER_CORE a core, at least four; MESH_TEST_WORKERS sets another count for a run (to compare on a machine). */
const WORKERS = Number(process.env.MESH_TEST_WORKERS) || Math.max(4, FILES_PER_CORE * availableParallelism());

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
  'test/bus/cluster-node-loss.test.ts',
  'test/server/graceful-sigterm.test.ts',
  'test/server/tracing.test.ts',
  'test/cli/meshctl.test.ts',
];
/** Lowers the priority of every file but the bad day's (and of what it starts). */
const YIELD_CPU = 'test/yield-cpu.ts';

export default defineConfig({
  // graphql ships CJS (main) and ESM (module); Node hands the libraries the CJS one, so the tests
  // must get the same copy or schema objects come "from another realm".
  resolve: { alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }] },
  test: {
    // Builds the dashboard (dist/dashboard) when its sources are newer than the build: the gateway
    // serves it at `/`; and meshctl into one file that the CLI tests run (test/fixtures/test-build.ts: the run's own folder).
    // And keeps one stream on the shared NATS server for the run (test/keep-jetstream-store.ts), and
    // one migrated database that each file's database is copied from (test/migrated-template.ts).
    globalSetup: ['test/build-dashboard.ts', 'test/build-meshctl.ts', 'test/build-gateway.ts', 'test/keep-jetstream-store.ts', 'test/migrated-template.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: WORKERS,
    fileParallelism: true,
    sequence: { sequencer: LongestFirst },
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
        },
      },
    ],
  },
});

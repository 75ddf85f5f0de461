import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { expect, test } from 'vitest';
import * as buckets from '../src/bus/buckets.js';
import * as nats from '../src/bus/nats.js';
import * as newsStream from '../src/bus/news-stream.js';
import * as retry from '../src/bus/retry.js';
import * as statusStream from '../src/bus/status-stream.js';
import * as config from '../src/config.js';
import * as liveQueue from '../src/kernel/live-queue.js';
import * as names from '../src/kernel/names.js';
import * as pacer from '../src/kernel/pacer.js';
import * as pages from '../src/kernel/pages.js';
import * as accessLog from '../src/server/access-log.js';
import * as health from '../src/server/health.js';
import * as server from '../src/server/http.js';
import * as persisted from '../src/server/persisted.js';
import * as ready from '../src/server/ready.js';
import * as requestBodyLimit from '../src/server/request-body-limit.js';
import * as stallWatch from '../src/server/stall-watch.js';
import * as accessTokens from '../src/services/access/tokens.js';
import * as forward from '../src/services/calls/forward.js';
import * as records from '../src/services/calls/records.js';
import * as responder from '../src/services/controller/responder.js';
import * as durations from '../src/services/durations/durations.js';
import * as handActs from '../src/services/hand-acts/hand-acts.js';
import * as machines from '../src/services/machines/machines.js';
import * as hearing from '../src/services/news/hearing.js';
import * as hearingFollower from '../src/services/news/hearing-follower.js';
import * as hearingShare from '../src/services/news/hearing-share.js';
import * as ingest from '../src/services/news/limits.js';
import * as malformedLog from '../src/services/news/malformed-log.js';
import * as partitions from '../src/services/news/partitions.js';
import * as wire from '../src/services/news/wire.js';
import * as plan from '../src/services/plans/plan.js';
import * as resends from '../src/services/plans/resends.js';
import * as timeouts from '../src/services/plans/timeouts.js';
import * as leases from '../src/services/replicas/leases.js';
import * as holdings from '../src/services/seats/holdings.js';
import * as compose from '../src/services/status/composing/compose.js';
import * as composer from '../src/services/status/composing/composer.js';
import * as composeCrossing from '../src/services/status/composing/crossing.js';
import * as composePoke from '../src/services/status/composing/poke.js';
import * as pokeGathering from '../src/services/status/composing/poke-gathering.js';
import * as composeScheduler from '../src/services/status/composing/scheduler.js';
import * as composeStep from '../src/services/status/composing/step.js';
import * as composition from '../src/services/status/composition.js';
import * as feed from '../src/services/status/live/feed.js';
import * as latest from '../src/services/status/live/latest.js';
import * as recentDeltas from '../src/services/status/live/recent.js';
import * as liveSubscription from '../src/services/status/live/subscription.js';
import * as statusCounts from '../src/services/status/looking-back/counts.js';
import * as statusHistory from '../src/services/status/looking-back/history.js';
import * as lookBackIndex from '../src/services/status/looking-back/look-back-index.js';
import * as machineChanges from '../src/services/status/looking-back/machine-changes.js';
import * as machineHistory from '../src/services/status/looking-back/machine-history.js';
import * as recentWindow from '../src/services/status/looking-back/recent-window.js';
import * as streamFollower from '../src/services/status/replicating/stream-follower.js';
import * as streamPublisher from '../src/services/status/replicating/stream-publisher.js';
import * as statusWire from '../src/services/status/replicating/wire.js';
import * as store from '../src/store/db.js';

// A figure in the docs that a constant fixes is written `<figure> (`CONSTANT`)`, e.g.
// "collected for 5 ms (`NEWS_BATCH_MS`)": this test reads every such figure and compares it
// with the constant, so the docs cannot drift from the code again.
const modules = [
  buckets,
  nats,
  newsStream,
  retry,
  config,
  names,
  pacer,
  liveQueue,
  pages,
  server,
  accessLog,
  health,
  ready,
  stallWatch,
  requestBodyLimit,
  accessTokens,
  forward,
  records,
  responder,
  durations,
  handActs,
  machines,
  hearing,
  hearingFollower,
  hearingShare,
  ingest,
  partitions,
  malformedLog,
  wire,
  holdings,
  plan,
  timeouts,
  resends,
  leases,
  composer,
  composeCrossing,
  composeScheduler,
  pokeGathering,
  composition,
  statusCounts,
  feed,
  latest,
  liveSubscription,
  compose,
  composeStep,
  composePoke,
  statusStream,
  statusHistory,
  machineHistory,
  lookBackIndex,
  recentWindow,
  machineChanges,
  recentDeltas,
  streamFollower,
  streamPublisher,
  statusWire,
  persisted,
  store,
];
const constants = new Map<string, unknown>(modules.flatMap((m) => Object.entries(m)));

const UNITS: Record<string, number> = { ms: 1, s: 1000, min: 60_000, h: 3_600_000, d: 86_400_000, days: 86_400_000, KiB: 1024, MiB: 1024 * 1024 };

/** The figure as the constant would hold it: times in ms for a `_MS` constant, else as written. */
function figureValue(figure: string, unit: string | undefined, constant: string): number {
  const n = Number(figure.replace(/[, ]/g, ''));
  if (!unit) return n;
  if (unit === 'KiB' || unit === 'MiB') return n * UNITS[unit]!;
  return constant.endsWith('_MS') ? n * UNITS[unit]! : n;
}

const CONSTANT = /\(`([A-Z][A-Z0-9_]+)`/g;
/** The last figure, with its unit, in the words before a constant's name on its line. */
const LAST_FIGURE = /(\d[\d,]*(?:\.\d+)?)\s?(ms|s|min|h|d|days|KiB|MiB)?\b(?!.*\d)/;

const docs = [
  'README.md',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md') && f !== 'BENCHMARKS.md')
    .map((f) => `docs/${f}`),
];

test('every figure the docs tie to a constant is that constant’s value', () => {
  const seen: string[] = [];
  for (const file of docs) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(CONSTANT)) {
      const name = match[1]!;
      if (name.startsWith('MESH_')) continue; // an environment variable, its default is in config.ts
      const before = text
        .slice(Math.max(0, match.index - 60), match.index)
        .split('\n')
        .pop()!;
      const found = LAST_FIGURE.exec(before);
      if (!found) continue; // the constant named without a figure
      const [, figure, unit] = found;
      const constant = constants.get(name);
      expect(constant, `${file}: ${name} is not an exported constant`).toBeTypeOf('number');
      expect(figureValue(figure!, unit, name), `${file}: "${figure}${unit ? ` ${unit}` : ''} (${name})"`).toBe(constant);
      seen.push(name);
    }
  }
  expect(seen.length).toBeGreaterThan(10);
});

// A file a doc or a comment names must exist: `src/...`, `test/...`, `docs/...`, `bench/...`,
// `migrations/...`, `dashboard/...` from the repository's root, and a bare or partial file name
// ending .ts (or .tsx, .md, .graphql) from the naming file's folder or its parent (a sibling
// domain), the root, src/, src/services/ or docs/ — or, bare, as
// any file of the repository by that name. Docs are README.md, docs/*.md and every folder's
// README; comments are those of src/, test/, dashboard/src/ and bench/.
const ROOTS = ['src', 'test', 'docs', 'bench', 'migrations', 'dashboard'];
/** Documents named that are not kept in the repository: the design contract the project is built to. */
const OUTSIDE_THE_REPOSITORY = new Set(['DESIGN.md']);
const NOT_WALKED = new Set(['node_modules', 'dist', 'generated']);

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (NOT_WALKED.has(entry.name)) return [];
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path) : [path];
  });
}

const ROOTED = new RegExp(`(?<![\\w./@-])(?:${ROOTS.join('|')})/[\\w./-]*\\w`, 'g');
const RELATIVE = /(?<![\w./@-])[\w-]+(?:\/[\w.-]+)*\.(?:ts|tsx|md|graphql)(?![\w/])/g;
/** The comment text of a source file: `//` lines and the lines of block comments. */
const commentsOf = (text: string): string =>
  text
    .split('\n')
    .filter((line) => /^\s*(\/\/|\/\*|\*)/.test(line))
    .join('\n');

test('every file a doc or a comment names exists', () => {
  const repository = ['README.md', ...ROOTS.flatMap((root) => filesUnder(root))];
  const names = new Set(repository.map((file) => basename(file)));
  const broken: string[] = [];
  let checked = 0;
  const check = (file: string, text: string) => {
    for (const [path] of text.matchAll(ROOTED)) {
      checked++;
      if (!existsSync(path)) broken.push(`${file}: ${path}`);
    }
    for (const [path] of text.matchAll(RELATIVE)) {
      if (ROOTS.some((root) => path.startsWith(`${root}/`)) || OUTSIDE_THE_REPOSITORY.has(path)) continue;
      checked++;
      const from = [join(dirname(file), path), join(dirname(file), '..', path), path, join('src', path), join('src/services', path), join('docs', path)];
      if (from.some((candidate) => existsSync(candidate)) || (!path.includes('/') && names.has(path))) continue;
      broken.push(`${file}: ${path}`);
    }
  };
  for (const file of repository.filter((f) => f === 'README.md' || f.startsWith('docs/') || basename(f) === 'README.md')) {
    if (file.endsWith('.md')) check(file, readFileSync(file, 'utf8'));
  }
  for (const file of repository.filter((f) => /^(src|test|bench|dashboard\/src)\//.test(f) && /\.tsx?$/.test(f))) {
    check(file, commentsOf(readFileSync(file, 'utf8')));
  }
  expect(broken).toEqual([]);
  expect(checked).toBeGreaterThan(100);
});

// Builds what `npm start`, `npm run simulate` and `npm run migrate` run, only when it is stale: the
// gateway (tsc into dist/src) and the dashboard (Vite into dist/dashboard), each on its own. A part
// is stale when its build is missing, or when a file it is built from was added, removed or
// changed (its modification time or size) since its last successful build, as recorded then in
// dist/.built/<part>.json. `--always` builds anyway (`npm run build`); naming a part builds only it.
//
//   node scripts/build-if-stale.mjs [--always] [gateway|dashboard]…
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where each part's record of its last build is kept: under dist/, so that removing dist/ forgets every build. */
export const RECORDS = 'dist/.built';
/** Folders never walked for sources: packages are followed through package-lock.json. */
const NOT_SOURCES = new Set(['node_modules', 'dist', '.git']);

/**
 * The parts: what each is built from (files or folders from the root), the file its build makes,
 * and how it is built. The dashboard is also built from the gateway's modules it bundles (the delta
 * algebra, the domain errors): its builder answers them, and they are recorded with its sources.
 */
export const PARTS = {
  gateway: {
    sources: ['src', 'migrations', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json'],
    // What tsc reads: a README or a .graphql document beside the code changes nothing it emits.
    files: /\.[cm]?[jt]s$|\.json$/,
    made: 'dist/src/main.js',
    builder: 'typescript',
    build: buildGateway,
  },
  dashboard: {
    sources: ['dashboard', 'package-lock.json'],
    files: /./,
    made: 'dist/dashboard/index.html',
    builder: 'vite',
    build: buildDashboard,
  },
};

/** Every file of `paths` (files or folders, from `root`) whose name matches `files`, by its path from the root: its modification time and size. */
function fingerprint(root, paths, files = /./, into = {}) {
  for (const path of paths) {
    const full = join(root, path);
    if (!existsSync(full)) continue;
    const stat = statSync(full);
    if (stat.isDirectory()) {
      for (const name of readdirSync(full)) if (!NOT_SOURCES.has(name)) fingerprint(root, [join(path, name)], files, into);
    } else if (files.test(path)) into[path.split(sep).join('/')] = `${stat.mtimeMs} ${stat.size}`;
  }
  return into;
}

const recordOf = (root, name) => join(root, RECORDS, `${name}.json`);

function readRecord(root, name) {
  try {
    return JSON.parse(readFileSync(recordOf(root, name), 'utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Why `name` must be built, or undefined when its build is up to date: no build, no record of one,
 * or the first source added, removed or changed since.
 */
export function staleness(root, name) {
  const part = PARTS[name];
  if (!existsSync(join(root, part.made))) return `${part.made} is missing`;
  const record = readRecord(root, name);
  if (!record) return 'no record of its last build';
  const now = { ...fingerprint(root, part.sources, part.files), ...fingerprint(root, record.bundled) };
  for (const path of Object.keys(now)) {
    if (!(path in record.sources)) return `${path} is new`;
    if (now[path] !== record.sources[path]) return `${path} changed`;
  }
  const gone = Object.keys(record.sources).find((path) => !(path in now));
  return gone ? `${gone} is gone` : undefined;
}

/**
 * Builds each part named that is stale (or every one named, `always`), one after the other, and
 * records what it was built from. The sources are read before the build, so that a file changed
 * while it runs makes the next start build again. A failed build throws, its record removed.
 * `builders` replaces how a part is built (the tests); a builder answers the files it bundled
 * from outside the part's own sources, if any. Answers the parts built.
 */
export async function buildIfStale(root, { names = Object.keys(PARTS), always = false, builders = {}, log = console.log } = {}) {
  const built = [];
  for (const name of names) {
    const part = PARTS[name];
    const why = always ? 'asked to' : staleness(root, name);
    if (!why) {
      log(`${name}: up to date`);
      continue;
    }
    const build = builders[name] ?? part.build;
    if (!builders[name] && !installed(root, part.builder)) {
      if (!existsSync(join(root, part.made))) throw new Error(`${name} is not built and ${part.builder} is not installed (npm ci installs it)`);
      log(`${name}: ${why}, but ${part.builder} is not installed (a production install): the build there is used`);
      continue;
    }
    log(`${name}: building (${why})`);
    const sources = fingerprint(root, part.sources, part.files);
    rmSync(recordOf(root, name), { force: true });
    const bundled = ((await build(root)) ?? []).filter((path) => !(path in sources));
    mkdirSync(join(root, RECORDS), { recursive: true });
    writeFileSync(recordOf(root, name), `${JSON.stringify({ sources: { ...sources, ...fingerprint(root, bundled) }, bundled }, null, 1)}\n`);
    built.push(name);
  }
  return built;
}

/** Whether a package can be loaded from the root (a production install has no dev dependencies). */
function installed(root, name) {
  try {
    createRequire(join(root, 'package.json')).resolve(`${name}/package.json`);
    return true;
  } catch {
    return false;
  }
}

/** tsc with the build's config, in a process of its own as `npm run build` always ran it. */
function buildGateway(root) {
  const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
  const { status } = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  if (status !== 0) throw new Error(`tsc failed (exit ${status})`);
}

/** Vite with the dashboard's config; answers the files it bundled, from the root (packages and virtual modules left out). */
async function buildDashboard(root) {
  const vite = createRequire(join(root, 'package.json')).resolve('vite');
  const { build } = await import(vite);
  const output = await build({ configFile: join(root, 'dashboard/vite.config.ts') });
  const chunks = (Array.isArray(output) ? output : [output]).flatMap((o) => o.output).filter((o) => o.type === 'chunk');
  return chunks
    .flatMap((chunk) => chunk.moduleIds)
    .filter((id) => isAbsolute(id) && !id.includes(`${sep}node_modules${sep}`))
    .map((id) => relative(root, id).split(sep).join('/'))
    .filter((path) => !path.startsWith('..'));
}

const main = async () => {
  const args = process.argv.slice(2);
  const names = args.filter((arg) => arg !== '--always');
  const unknown = names.filter((name) => !(name in PARTS));
  if (unknown.length) throw new Error(`unknown part ${unknown.join(', ')}: the parts are ${Object.keys(PARTS).join(', ')}`);
  const root = dirname(dirname(fileURLToPath(import.meta.url)));
  await buildIfStale(root, { names: names.length ? names : undefined, always: args.includes('--always') });
};

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((error) => {
    console.error(`build-if-stale: ${error.message}`);
    process.exit(1);
  });
}

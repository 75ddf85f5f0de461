// Runs the npm scripts named on the command line at once and exits 1 when any failed. Each one's
// output is printed whole as it ends, but for the one named after `--live`, whose output goes
// straight through as it comes (vitest's progress). `npm test` runs its checks beside the tests
// this way: each check is mostly one core's work (tsc, knip, dependency-cruiser), and most test
// files wait rather than compute, so two cores finish both in less time than one after the other.
// The live one starts first and keeps its priority; the others run at CHECKS_NICENESS, the test
// files' own (test/yield-cpu.ts), so that vitest's global setup (three builds and a migration,
// which every test file waits for) and then the bad day get the cores first: at the same priority,
// five checks beside them took five parts in six.
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';

/** The checks' niceness: the test files' (test/yield-cpu.ts), below vitest's setup and the bad day. */
const CHECKS_NICENESS = 10;

const args = process.argv.slice(2);
const liveAt = args.indexOf('--live');
const live = liveAt === -1 ? undefined : args[liveAt + 1];
const names = args.filter((_, i) => i !== liveAt && i !== liveAt + 1);
if (live) names.unshift(live);
const npm = process.env.npm_execpath;

/** Lowers a check's priority; one that already ended has none to lower. */
function lower(pid) {
  try {
    setPriority(pid, CHECKS_NICENESS);
  } catch {}
}

function run(name) {
  return new Promise((resolve) => {
    const started = Date.now();
    const stdio = name === live ? ['ignore', 'inherit', 'inherit'] : ['ignore', 'pipe', 'pipe'];
    const child = npm ? spawn(process.execPath, [npm, 'run', '--silent', name], { stdio }) : spawn('npm', ['run', '--silent', name], { stdio });
    // Set before npm has loaded, so the check it starts inherits it.
    if (name !== live && child.pid !== undefined) lower(child.pid);
    let output = '';
    child.stdout?.on('data', (chunk) => (output += chunk));
    child.stderr?.on('data', (chunk) => (output += chunk));
    child.on('close', (code) => {
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      process.stdout.write(`${code === 0 ? '✓' : '✗'} ${name} (${seconds} s)\n${output.trim() ? `${output.trimEnd()}\n` : ''}`);
      resolve(code === 0);
    });
  });
}

const passed = await Promise.all(names.map(run));
process.exit(passed.every(Boolean) ? 0 : 1);

// Runs the npm scripts named on the command line at once and prints each one's output, whole, as it
// ends; exits 1 when any failed. `npm test` runs its checks this way: each is mostly one core's
// work (tsc, knip, dependency-cruiser), so two cores finish them in about half the time.
import { spawn } from 'node:child_process';

const names = process.argv.slice(2);
const npm = process.env.npm_execpath;
const runs = names.map(
  (name) =>
    new Promise((resolve) => {
      const started = Date.now();
      const child = npm
        ? spawn(process.execPath, [npm, 'run', '--silent', name], { stdio: ['ignore', 'pipe', 'pipe'] })
        : spawn('npm', ['run', '--silent', name], { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (chunk) => (output += chunk));
      child.stderr.on('data', (chunk) => (output += chunk));
      child.on('close', (code) => {
        const seconds = ((Date.now() - started) / 1000).toFixed(1);
        process.stdout.write(`${code === 0 ? '✓' : '✗'} ${name} (${seconds} s)\n${output.trim() ? `${output.trimEnd()}\n` : ''}`);
        resolve(code === 0);
      });
    }),
);
const passed = await Promise.all(runs);
process.exit(passed.every(Boolean) ? 0 : 1);

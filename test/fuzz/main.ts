import { rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { bundleGateway } from '../build-gateway.js';
import { DOORS } from './doors.js';
import { type FuzzReport, fuzzGateway, type GatewayKind, inputAt, RSS_BOUND_MB, replayOn } from './fuzzer.js';

// `npm run fuzz -- --minutes N`: every door of a running gateway, an open one and a closed one
// (a tokens file and a JWKS) at once, for N minutes; exits 1 on any failure, printing each with the
// seed and path that make it again (`--replay door:seed:path`) and its raw input.
// Options: --seed S, --doors http,graphql-ws,…, --gateway open|closed|both, --rss-mb M.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The fuzzer's own bundle of the gateway, removed at the end: the tests' is rebuilt by every vitest run, and two fuzz runs may be at work. */
const FUZZ_BUILD = join(ROOT, 'dist/fuzz', String(process.pid));

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '1' },
    seed: { type: 'string' },
    doors: { type: 'string' },
    gateway: { type: 'string', default: 'both' },
    'rss-mb': { type: 'string', default: String(RSS_BOUND_MB) },
    replay: { type: 'string' },
  },
});

const doors = values.doors ? DOORS.filter((d) => values.doors!.split(',').includes(d.name)) : DOORS;
const kinds: GatewayKind[] = values.gateway === 'both' ? ['open', 'closed'] : [values.gateway as GatewayKind];
const seed = values.seed ? Number(values.seed) : Math.floor(Math.random() * 2 ** 30);
const stamp = () => new Date().toISOString().slice(11, 19);
const say = (line: string) => console.log(`${stamp()} ${line}`);

const entry = await bundleGateway(join(ROOT, 'src/main.ts'), FUZZ_BUILD);
symlinkSync(join(ROOT, 'dist/dashboard'), join(FUZZ_BUILD, 'dashboard'), 'dir');
process.on('exit', () => rmSync(FUZZ_BUILD, { recursive: true, force: true }));

if (values.replay) {
  const [doorName, seedText, ...steps] = values.replay.split(':');
  const path = steps.join(':');
  const door = DOORS.find((d) => d.name === doorName);
  if (!door || !seedText || !path) throw new Error(`--replay takes <door>:<seed>:<path>, the doors being ${DOORS.map((d) => d.name).join(', ')}`);
  const input = await inputAt(door, Number(seedText), path);
  say(`input: ${JSON.stringify(input)}`);
  const [result] = await replayOn(kinds[0]!, [{ door, input }], entry);
  say(`verdict: ${JSON.stringify(result!.verdict)}; the gateway ${result!.alive ? 'still serves' : 'no longer serves'}`);
  process.exit(result!.verdict.ok && result!.alive ? 0 : 1);
}

say(
  `fuzzing ${doors.map((d) => d.name).join(', ')} on the ${kinds.join(' and ')} gateway for ${values.minutes} min, seed ${seed}, resident memory bound ${values['rss-mb']} MB`,
);
const reports: FuzzReport[] = await Promise.all(
  kinds.map((kind) =>
    fuzzGateway(kind, {
      doors,
      durationMs: Number(values.minutes) * 60_000,
      seed,
      entry,
      rssBoundMb: Number(values['rss-mb']),
      log: say,
      progressEveryMs: 15_000,
      restartOnCrash: true,
    }),
  ),
);

console.log('\nsummary');
for (const report of reports) {
  const total = Object.values(report.sent).reduce((a, b) => a + b, 0);
  console.log(
    `  ${report.gateway} gateway: ${total} inputs, peak resident memory ${Math.round(report.peakRssMb)} MB, ${report.restarts} restarts after a crash`,
  );
  for (const [door, sent] of Object.entries(report.sent)) {
    const outcomes = Object.entries(report.outcomes[door] ?? {})
      .sort((a, b) => b[1] - a[1])
      .slice(0, 8)
      .map(([o, n]) => `${o} ${n}`)
      .join(', ');
    console.log(`    ${door}: ${sent} (${outcomes})`);
  }
  for (const f of report.failures) {
    console.log(`  FAILED ${f.gateway} ${f.door} ${f.kind} ×${f.count}: ${f.detail.slice(0, 400)}`);
    if (f.seed !== undefined) console.log(`    replay: npm run fuzz -- --gateway ${f.gateway} --replay ${f.door}:${f.seed}:${f.path}`);
    if (f.input !== undefined) console.log(`    input: ${JSON.stringify(f.input).slice(0, 2000)}`);
    for (const s of f.suspects ?? []) console.log(`    in flight: ${s.door} --replay ${s.door}:${s.seed}:${s.path} ${JSON.stringify(s.input).slice(0, 1000)}`);
  }
  for (const line of report.errorLines) console.log(`  logged at error: ${line.slice(0, 400)}`);
}
const failed = reports.some((r) => r.failures.length > 0);
console.log(failed ? '\nFAILED' : '\npassed: no crash, /health answered throughout, no INTERNAL, no 5xx, memory under the bound');
process.exit(failed ? 1 : 0);

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect } from '@nats-io/transport-node';
import fc from 'fast-check';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { GATEWAY_BUNDLE } from '../fixtures/child.js';
import { aTokensFile, testEnv } from '../fixtures/services.js';
import { DOORS, type Door, type FailureKind, type Target, type Verdict } from './doors.js';

const DOORS_BY_NAME = new Map(DOORS.map((d) => [d.name, d]));

// The fuzzer's runner: starts a gateway of its own (a child process, so that a crash is its exit),
// throws each door's inputs at it, one at a time per door and every door at once, and judges:
// no crash, /health answered throughout, no INTERNAL, no 5xx, resident memory under a bound.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** How often the child's /health is asked, and how long an answer is awaited before it counts as unanswered. */
const HEALTH_EVERY_MS = 500;
const HEALTH_WAIT_MS = 10_000;
/** How often the child's resident memory is read (/proc/<pid>/status, VmRSS). */
const RSS_EVERY_MS = 1_000;
/**
 * The fuzzed gateway's V8 heap is capped, as a container's memory limit would: without a cap V8
 * on this 24 GB machine lets garbage grow to gigabytes before it collects (a 4-minute run showed
 * 900 MB of heap used, of which a heap snapshot found 250 MB alive: mostly the hand-acts view,
 * bounded at HAND_ACTS_KEPT). Under the cap, live data that grows without bound ends the child
 * (out of memory: a crash, counted), and garbage is collected before it shows as growth.
 */
const CHILD_HEAP_MB = 768;
/**
 * The resident memory a fuzzed gateway must stay under: the heap's cap, and the code, buffers
 * and stacks beside it. An idle child serves in about 150 MB; every answer, frame and body is
 * bounded, and so is every kept record. Past it the run fails, naming the doors' inputs in flight.
 */
export const RSS_BOUND_MB = 1_000;
/** Inputs generated per fast-check seed: a failure is replayed as `seed` and `path` (the input's index, then its shrink steps). */
const BATCH = 100;
/** How long a failure's input is shrunk at most (against the same live gateway) before the run's summary. */
const SHRINK_MS = 20_000;
const ISSUER = 'https://fuzz.example.test/';
const AUDIENCE = 'mesh-gateway';

export type GatewayKind = 'open' | 'closed';

/** One failure: what failed, the input that showed it and how to make it again. */
interface Failure {
  gateway: GatewayKind;
  door: string;
  kind: FailureKind | 'crash' | 'health' | 'memory';
  outcome: string;
  detail: string;
  /** `npm run fuzz -- --replay <door>:<seed>:<path>` generates it again. */
  seed?: number;
  path?: string;
  input?: unknown;
  /** How many inputs failed the same way (the first is kept). */
  count: number;
  /** For a crash: the inputs every door had in flight when the child exited. */
  suspects?: { door: string; seed: number; path: string; input: unknown }[];
}

export interface FuzzReport {
  gateway: GatewayKind;
  sent: Record<string, number>;
  outcomes: Record<string, Record<string, number>>;
  failures: Failure[];
  peakRssMb: number;
  restarts: number;
  /** Lines the gateway logged at error or above (a server fault), the first few. */
  errorLines: string[];
}

export interface FuzzOptions {
  doors: Door<any>[];
  durationMs: number;
  seed: number;
  /** The gateway build to start (the tests' bundle by default). */
  entry?: string;
  rssBoundMb?: number;
  /** Progress lines (every `progressEveryMs`) and the failures as they come. */
  log?: (line: string) => void;
  progressEveryMs?: number;
  /** Started again after a crash, to go on; otherwise the run ends at the first crash. */
  restartOnCrash?: boolean;
  /** Each failure's input shrunk after the run (default true; the short run in `npm test` keeps its time instead). */
  shrink?: boolean;
  /** Inputs kept from earlier failures (test/fuzz/seeds.ts), sent first, one at a time. */
  seeds?: KeptSeed[];
}

/** A failure the fuzzer once found, kept as the input that showed it, replayed on every run. */
export interface KeptSeed {
  /** What it showed, and where it is tracked. */
  name: string;
  door: string;
  gateway: GatewayKind | 'both';
  input: unknown;
}

/** A port nobody listens on now, for the child's PORT (it logs nothing at warn that names it). */
function aFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The child's resident memory in MB, or undefined once it is gone. */
function rssMbOf(pid: number): number | undefined {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

/** Whether /health answers 200 within HEALTH_WAIT_MS. */
async function healthy(port: number): Promise<boolean> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(HEALTH_WAIT_MS) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

/** The callers of a closed gateway: a tokens file and a JWKS of its own, and a credential for each placeholder. */
async function closedCallers(dir: string): Promise<{ env: Record<string, string>; credentials: Record<string, string>; remove(): void }> {
  const tokens = { read: randomBytes(16).toString('hex'), act: randomBytes(16).toString('hex'), admin: randomBytes(16).toString('hex') };
  const file = aTokensFile([
    { name: 'fz-reader', scopes: ['read'], token: tokens.read },
    { name: 'fz-actor', scopes: ['read', 'act'], token: tokens.act },
    { name: 'fz-admin', scopes: ['read', 'act', 'admin'], token: tokens.admin },
  ]);
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwksPath = join(dir, 'jwks.json');
  writeFileSync(jwksPath, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'fz', alg: 'ES256', use: 'sig' }] }));
  const now = Math.floor(Date.now() / 1000);
  const jwt = (scope: string, exp: number, aud = AUDIENCE) =>
    new SignJWT({ scope })
      .setProtectedHeader({ alg: 'ES256', kid: 'fz' })
      .setSubject('fz@example.test')
      .setIssuer(ISSUER)
      .setAudience(aud)
      .setIssuedAt(now - 5)
      .setExpirationTime(exp)
      .sign(privateKey);
  return {
    env: { MESH_TOKENS_FILE: file.path, MESH_JWKS_FILE: jwksPath, MESH_JWT_ISSUER: ISSUER, MESH_JWT_AUDIENCE: AUDIENCE },
    credentials: {
      'token:read': tokens.read,
      'token:act': tokens.act,
      'token:admin': tokens.admin,
      'jwt:read': await jwt('read', now + 7200),
      'jwt:admin': await jwt('read act admin', now + 7200),
      'jwt:expired': await jwt('read', now - 60),
      'jwt:other-audience': await jwt('read', now + 7200, 'someone-else'),
    },
    remove: file.remove,
  };
}

/** Made-up credentials for an open gateway: it takes none, so they only have to look like some. */
function openCredentials(): Record<string, string> {
  const jwtShaped = `eyJhbGciOiJFUzI1NiJ9.${Buffer.from('{"sub":"x"}').toString('base64url')}.c2ln`;
  return {
    'token:read': 'fz-read',
    'token:act': 'fz-act',
    'token:admin': 'fz-admin',
    'jwt:read': jwtShaped,
    'jwt:admin': jwtShaped,
    'jwt:expired': jwtShaped,
    'jwt:other-audience': jwtShaped,
  };
}

interface Child {
  process: ChildProcess;
  pid: number;
  port: number;
  exited: Promise<number | string>;
}

/** Starts the gateway bundle with `env` on a free port, logging at warn (kept: the error lines), and resolves once /health answers. */
async function startChild(entry: string, env: Record<string, string>, onLine: (line: string) => void): Promise<Child> {
  const port = await aFreePort();
  const child = spawn(process.execPath, [`--max-old-space-size=${CHILD_HEAP_MB}`, entry], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  let partial = '';
  let output = '';
  const read = (chunk: Buffer) => {
    const text = partial + chunk.toString();
    const lines = text.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (output.length < 20_000) output += `${line}\n`;
      onLine(line);
    }
  };
  child.stdout!.on('data', read);
  child.stderr!.on('data', read);
  const deadline = Date.now() + 60_000;
  let gone: number | string | undefined;
  void exited.then((code) => {
    gone = code;
  });
  while (!(await healthy(port))) {
    if (gone !== undefined) throw new Error(`the gateway exited (${gone}) before serving:\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the gateway did not serve within 60 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { process: child, pid: child.pid!, port, exited };
}

/** SIGTERM, then SIGKILL after 15 s. */
async function stopChild(child: Child): Promise<void> {
  if (child.process.exitCode !== null || child.process.signalCode !== null) return;
  const timer = setTimeout(() => child.process.kill('SIGKILL'), 15_000);
  child.process.kill('SIGTERM');
  await child.exited;
  clearTimeout(timer);
}

/** A door's inputs for one fast-check seed, as a property run with that seed would generate them. */
const inputsOf = (door: Door<unknown>, seed: number): unknown[] => fc.sample(door.input, { seed, numRuns: BATCH });
/** Seeds stay 31-bit: the run's seed, the door and the batch. */
const seedOf = (base: number, doorIndex: number, batch: number): number => (base + doorIndex * 1_000_000 + batch) % 2 ** 31;
/** A failure's signature: the same door, kind and what showed it (digits and long tails dropped) counts as one. */
const signature = (door: string, kind: string, detail: string) => `${door}|${kind}|${detail.replace(/\d+/g, 'N').slice(0, 80)}`;

/**
 * Fuzzes a gateway of `kind` (open: no callers' files; closed: a tokens file and a JWKS) for
 * `durationMs`, every door at once, and answers what was sent and what failed. Its own database
 * and controller/subject names are made and removed, as a test file's are.
 */
export async function fuzzGateway(kind: GatewayKind, options: FuzzOptions): Promise<FuzzReport> {
  const log = options.log ?? (() => undefined);
  const entry = options.entry ?? GATEWAY_BUNDLE;
  const rssBound = options.rssBoundMb ?? RSS_BOUND_MB;
  const made = await testEnv(`fz_${kind}`);
  const dir = mkdtempSync(join(tmpdir(), 'mesh-fuzz-'));
  const callers = kind === 'closed' ? await closedCallers(dir) : undefined;
  const env: Record<string, string> = { ...made.env, MESH_OPS_PER_SECOND: '1000000', ...callers?.env };
  const report: FuzzReport = { gateway: kind, sent: {}, outcomes: {}, failures: [], peakRssMb: 0, restarts: 0, errorLines: [] };
  const bySignature = new Map<string, Failure>();
  const fail = (failure: Omit<Failure, 'count' | 'gateway'>) => {
    const key = signature(failure.door, failure.kind, failure.detail);
    const known = bySignature.get(key);
    if (known) return void known.count++;
    const kept: Failure = { gateway: kind, count: 1, ...failure };
    bySignature.set(key, kept);
    report.failures.push(kept);
    log(
      `[${kind}] FAILURE ${failure.door} ${failure.kind} (${failure.outcome}): ${failure.detail.slice(0, 300)}${failure.seed === undefined ? '' : `\n  replay: --gateway ${kind} --replay ${failure.door}:${failure.seed}:${failure.path}`}`,
    );
  };
  const onLine = (line: string) => {
    if (!/"level":(50|60)/.test(line)) return;
    // One line for each message logged: the same fault logged a thousand times is one.
    const message = /"message":"([^"]{0,120})/.exec(line)?.[1] ?? line.slice(0, 120);
    if (report.errorLines.length < 20 && !report.errorLines.some((kept) => kept.includes(message))) report.errorLines.push(line.slice(0, 1000));
  };
  const nc = await connect({ servers: env.NATS_URL, maxPingOut: 10 });
  let child = await startChild(entry, env, onLine);
  const target: Target = { port: child.port, nc, subjects: made.subjects, controller: made.controller, credentials: callers?.credentials ?? openCredentials() };
  const inFlight = new Map<string, { door: string; seed: number; path: string; input: unknown }>();
  const deadline = Date.now() + options.durationMs;
  let stopped = false;
  /** Resolves while the child serves; replaced by the restart after a crash. */
  let serving: Promise<void> = Promise.resolve();
  let generation = 0;

  const watch = (c: Child) => {
    void c.exited.then(async (code) => {
      if (stopped || c !== child) return;
      generation++;
      fail({ door: 'process', kind: 'crash', outcome: `exit ${code}`, detail: `the gateway exited (${code})`, suspects: [...inFlight.values()] });
      if (!options.restartOnCrash || Date.now() > deadline) {
        stopped = true;
        return;
      }
      serving = startChild(entry, env, onLine).then((next) => {
        child = next;
        target.port = next.port;
        report.restarts++;
        watch(next);
      });
      await serving;
    });
  };
  watch(child);

  const health = setInterval(async () => {
    const c = child;
    if (stopped || c.process.exitCode !== null) return;
    if (!(await healthy(c.port)) && c === child && c.process.exitCode === null && !stopped)
      fail({
        door: 'process',
        kind: 'health',
        outcome: 'no /health',
        detail: `/health was not answered 200 within ${HEALTH_WAIT_MS} ms`,
        suspects: [...inFlight.values()],
      });
  }, HEALTH_EVERY_MS);
  let memoryFailed = false;
  const memory = setInterval(() => {
    const mb = rssMbOf(child.pid);
    if (mb === undefined) return;
    report.peakRssMb = Math.max(report.peakRssMb, mb);
    if (mb > rssBound && !memoryFailed) {
      memoryFailed = true;
      fail({
        door: 'process',
        kind: 'memory',
        outcome: `${Math.round(mb)} MB`,
        detail: `resident memory ${Math.round(mb)} MB, over the bound of ${rssBound} MB`,
        suspects: [...inFlight.values()],
      });
    }
  }, RSS_EVERY_MS);
  const progress = setInterval(() => {
    const counts = options.doors.map((d) => `${d.name} ${report.sent[d.name] ?? 0}`).join(', ');
    const rss = rssMbOf(child.pid);
    log(
      `[${kind}] ${Math.round((options.durationMs - (deadline - Date.now())) / 1000)} s: ${counts}; rss ${rss === undefined ? '-' : Math.round(rss)} MB; failures ${report.failures.length}`,
    );
  }, options.progressEveryMs ?? 10_000);

  /** Each kept seed alone, then a moment for an error thrown on a later tick to end the process. */
  const replaySeeds = async () => {
    for (const seed of (options.seeds ?? []).filter((s) => s.gateway === 'both' || s.gateway === kind)) {
      const door = options.doors.find((d) => d.name === seed.door) ?? DOORS_BY_NAME.get(seed.door);
      if (!door) throw new Error(`the kept seed "${seed.name}" names no door: ${seed.door}`);
      await serving;
      const sentIn = generation;
      inFlight.set(`seed ${seed.name}`, { door: seed.door, seed: -1, path: seed.name, input: seed.input });
      const verdict: Verdict = await door
        .send(target, seed.input)
        .catch((error) => ({ ok: false, kind: 'unreachable' as const, outcome: 'threw', detail: String(error) }));
      await new Promise((r) => setTimeout(r, 200));
      inFlight.delete(`seed ${seed.name}`);
      if (verdict.ok || sentIn !== generation || child.process.exitCode !== null) continue;
      fail({ door: `seed "${seed.name}"`, kind: verdict.kind, outcome: verdict.outcome, detail: verdict.detail, input: seed.input });
    }
    // A seed that ended the process is the crash's (its suspects name it): the fuzzing goes on after the restart.
    await serving;
  };

  const runDoor = async (door: Door<unknown>, doorIndex: number) => {
    report.sent[door.name] = 0;
    const outcomes: Record<string, number> = {};
    report.outcomes[door.name] = outcomes;
    for (let batch = 0; !stopped && Date.now() < deadline; batch++) {
      const seed = seedOf(options.seed, doorIndex, batch);
      const inputs = inputsOf(door, seed);
      for (let k = 0; k < inputs.length && !stopped && Date.now() < deadline; k++) {
        await serving;
        const sentIn = generation;
        const input = inputs[k];
        inFlight.set(door.name, { door: door.name, seed, path: String(k), input });
        const verdict: Verdict = await door
          .send(target, input)
          .catch((error) => ({ ok: false, kind: 'unreachable' as const, outcome: 'threw', detail: String(error) }));
        inFlight.delete(door.name);
        report.sent[door.name]!++;
        const outcome = verdict.outcome.slice(0, 40);
        outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
        // What failed because the child died (or was being started again) is the crash's, judged once.
        if (verdict.ok || stopped || sentIn !== generation || child.process.exitCode !== null) continue;
        if (verdict.kind === 'unreachable' && !(await healthy(target.port))) continue;
        fail({ door: door.name, kind: verdict.kind, outcome: verdict.outcome, detail: verdict.detail, seed, path: String(k), input });
      }
    }
  };

  try {
    await replaySeeds();
    await Promise.all(options.doors.map((door, i) => runDoor(door, i)));
    stopped = true;
    // Each failure kept with a seed is shrunk, against the same gateway, while it still serves.
    for (const failure of report.failures) {
      if (options.shrink === false || failure.seed === undefined || child.process.exitCode !== null) continue;
      const door = options.doors.find((d) => d.name === failure.door)!;
      const shrunk = await shrink(door, target, failure);
      if (shrunk) {
        failure.path = shrunk.path;
        failure.input = shrunk.input;
      }
    }
    if (child.process.exitCode === null) {
      const mb = rssMbOf(child.pid);
      if (mb !== undefined) report.peakRssMb = Math.max(report.peakRssMb, mb);
    }
  } finally {
    stopped = true;
    clearInterval(health);
    clearInterval(memory);
    clearInterval(progress);
    await serving.catch(() => undefined);
    await stopChild(child);
    await nc.close();
    await made.cleanup().catch(() => undefined);
    callers?.remove();
    rmSync(dir, { recursive: true, force: true });
  }
  return report;
}

/** The smallest input fast-check finds that fails the same way, from the failure's seed and path, within SHRINK_MS. */
async function shrink(door: Door<unknown>, target: Target, failure: Failure): Promise<{ path: string; input: unknown } | undefined> {
  const same = async (input: unknown) => {
    const verdict = await door.send(target, input);
    return verdict.ok || verdict.kind !== failure.kind;
  };
  const result = await fc.check(fc.asyncProperty(door.input, same), {
    seed: failure.seed,
    path: failure.path,
    numRuns: 1,
    interruptAfterTimeLimit: SHRINK_MS,
    markInterruptAsFailure: false,
  });
  if (!result.failed || result.counterexamplePath === null) return undefined;
  return { path: result.counterexamplePath, input: result.counterexample?.[0] };
}

/**
 * Sends one input to a gateway of `kind` started for it alone and answers the verdict, with
 * whether the gateway still served /health after it: what a kept seed (test/fuzz/seeds.ts) and
 * `--replay` run.
 */
export async function replayOn(
  kind: GatewayKind,
  inputs: { door: Door<unknown>; input: unknown }[],
  entry = GATEWAY_BUNDLE,
): Promise<{ verdict: Verdict; alive: boolean }[]> {
  const made = await testEnv(`fz_${kind}`);
  const dir = mkdtempSync(join(tmpdir(), 'mesh-fuzz-'));
  const callers = kind === 'closed' ? await closedCallers(dir) : undefined;
  const env: Record<string, string> = { ...made.env, MESH_OPS_PER_SECOND: '1000000', ...callers?.env };
  const nc = await connect({ servers: env.NATS_URL });
  let child: Child | undefined;
  try {
    const results: { verdict: Verdict; alive: boolean }[] = [];
    for (const { door, input } of inputs) {
      if (!child || child.process.exitCode !== null) child = await startChild(entry, env, () => undefined);
      const target: Target = {
        port: child.port,
        nc,
        subjects: made.subjects,
        controller: made.controller,
        credentials: callers?.credentials ?? openCredentials(),
      };
      const verdict = await door.send(target, input);
      // A crash may come a moment after the answer (an error thrown on a later tick).
      await new Promise((r) => setTimeout(r, 200));
      results.push({ verdict, alive: child.process.exitCode === null && (await healthy(child.port)) });
    }
    return results;
  } finally {
    if (child) await stopChild(child);
    await nc.close();
    await made.cleanup().catch(() => undefined);
    callers?.remove();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The input a failure's `seed` and `path` name, as fast-check generates (and shrinks) it: a replay by path runs the property first on the value at its end. */
export async function inputAt(door: Door<unknown>, seed: number, path: string): Promise<unknown> {
  let found: unknown;
  let calls = 0;
  fc.check(
    fc.property(door.input, (input) => {
      calls++;
      if (calls === 1) found = input;
      return calls > 1;
    }),
    { seed, path, numRuns: 1 },
  );
  return found;
}

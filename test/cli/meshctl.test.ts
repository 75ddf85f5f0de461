import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, onTestFinished, test } from 'vitest';
import { registerCommands } from '../../src/cli/commands.js';
import { useGateway } from '../fixtures/gateway.js';
import { anAgent, eventually } from '../fixtures/live.js';
import { MESHCTL_BUNDLE } from '../fixtures/meshctl.js';

// meshctl as a tool uses it: a child process against a running gateway, its output and exit codes.

let nc: NatsConnection;
let dir: string;
const ADMIN = 'admin-token-for-meshctl';
const READER = 'reader-token-for-meshctl';
// The machines beat once, before the tests: an hour's heartbeat keeps them UP however slowly the
// file runs (at 10 s they turned LATE 15 s in, on a loaded machine), so "UP" below is the truth.
const { gw: gateway, env } = useGateway('meshctl', {
  env: { MESH_HEARTBEAT_S: '3600' },
  tokens: [
    { name: 'ops', scopes: ['read', 'act', 'admin'], token: ADMIN },
    { name: 'viewer', scopes: ['read'], token: READER },
  ],
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** meshctl's commands as its main registers them, each with its path (`token new`). */
function commands(): { path: string; command: Command }[] {
  const program = new Command('meshctl');
  registerCommands(
    program,
    async () => undefined,
    () => undefined,
    () => false,
  );
  const walk = (command: Command, prefix: string): { path: string; command: Command }[] =>
    command.commands.flatMap((c) => {
      const path = `${prefix}${c.name()}`;
      return [{ path, command: c }, ...walk(c, `${path} `)];
    });
  return walk(program, '');
}
/** The long flags a command takes (`--why`), its help's own included. */
const flagsOf = (command: Command): string[] => [...command.options.map((o) => o.long!).filter(Boolean), '--help'];

/** Runs meshctl from source (as `npx meshctl` runs the built copy), against the test gateway. */
function meshctl(args: string[], options: { token?: string; url?: string } = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MESHCTL_BUNDLE, ...args],
      { env: { ...process.env, MESH_URL: options.url ?? gateway.url, MESH_TOKEN: options.token ?? ADMIN }, timeout: 30_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const json = async (args: string[], token?: string) => {
  const run = await meshctl(['--json', ...args], { token });
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout);
};

beforeAll(async () => {
  nc = await connect({ servers: env.env.NATS_URL });
  dir = mkdtempSync(join(tmpdir(), 'meshctl-'));
  const agent = await anAgent(env.env.NATS_URL);
  agent.heartbeat(env.subjects, 'cli-a1', { site: 'eu-1', modules: ['broker'], claims: { broker: ['queue'] } });
  agent.heartbeat(env.subjects, 'cli-b1', { site: 'us-1', modules: ['broker'], claims: { broker: ['queue'] } });
  await agent.close();
  await eventually(() => gateway.mesh.status.current()?.machines.length === 2, 'both machines in status');
}, 60_000);
afterAll(async () => {
  await nc?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('reading the mesh', () => {
  test('status prints machines by site and state, unheld seats and plans; --json is exactly the data', async () => {
    const run = await meshctl(['status']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/status \d+ composed .*: 2 machines/);
    expect(run.stdout).toMatch(/SITE\s+UP\s+LATE\s+SILENT/);
    expect(run.stdout).toMatch(/eu-1\s+1\s+0\s+0/);
    expect(run.stdout).toMatch(/unheld seats: agent, builder, registry/);
    const data = await json(['status']);
    expect(Object.keys(data)).toEqual(['status']);
    // The gateway's bare address (where `/` is the dashboard) reaches its GraphQL endpoint.
    const bare = await meshctl(['status'], { url: gateway.url.replace(/\/graphql$/, '') });
    expect(bare.code, bare.stderr).toBe(0);
    expect(bare.stdout).toMatch(/2 machines/);
    expect(data.status.machines.map((m: { name: string }) => m.name)).toEqual(['cli-a1', 'cli-b1']);
  });

  test('seats and seat NAME show holders; machines filter by state and site; machine NAME', async () => {
    const seats = await meshctl(['seats']);
    expect(seats.stdout).toMatch(/^SEAT\s+SCOPE\s+REPLICATED\s+ALIASES\s+HOLDERS/);
    expect(seats.stdout).toMatch(/queue\s+site\s+true\s+-\s+broker@cli-a1\*,broker@cli-b1\*/);
    const seat = await meshctl(['seat', 'queue']);
    expect(seat.stdout).toMatch(/serves:\s+depth\(queue!\)/);
    expect((await meshctl(['seat', 'nope'])).stderr).toBe('error NOT_FOUND: no seat named "nope"\n');
    const machines = await meshctl(['machines', '--site', 'us-1']);
    expect(machines.stdout).toMatch(/cli-b1\s+us-1\s+UP/);
    expect(machines.stdout).not.toMatch(/cli-a1/);
    expect((await json(['machines', '--state', 'SILENT'])).machines).toEqual([]);
    expect((await meshctl(['machine', 'cli-a1'])).stdout).toMatch(/holdings:\s+queue:broker\*/);
    expect((await meshctl(['machines', '--state', 'ASLEEP'])).code).toBe(2);
  });

  test('durations, hand-acts and repeated causes', async () => {
    for (let i = 0; i < 2; i++)
      expect((await meshctl(['record-hand-act', 'freed-disk', '--why', 'disk full', '--cause', 'disk', '--target', `cli-a1`])).code).toBe(0);
    const acts = await meshctl(['hand-acts', '--cause', 'disk']);
    expect(acts.stdout).toMatch(/ops\s+freed-disk\s+cli-a1\s+disk full\s+disk/);
    expect((await json(['hand-acts', '--since', '2000-01-01T00:00:00Z'])).handActs.edges.length).toBeGreaterThanOrEqual(2);
    expect((await meshctl(['repeated-causes'])).stdout).toMatch(/disk\s+2/);
    const durations = await meshctl(['durations', '--kind', 'APPLY']);
    expect(durations.stdout).toMatch(/^KIND\s+COUNT\s+P50/);
    expect(durations.stdout).toMatch(/APPLY\s+0/);
  });
});

describe('acting on the mesh', () => {
  test('seats rename, hold, add-holder, release and define --file', async () => {
    expect((await meshctl(['seats', 'hold', 'queue', 'cli-a1', 'broker', '--why', 'pin it'])).stdout).toMatch(/queue\s+cli-a1\s+broker\s+site\s+false/);
    expect((await meshctl(['seats', 'add-holder', 'queue', 'cli-b1', 'broker'])).stdout).toMatch(/cli-b1\s+broker/);
    const released = await meshctl(['seats', 'release', 'queue', 'cli-b1', 'broker']);
    expect(released.stdout).not.toMatch(/cli-b1/);
    const file = join(dir, 'seat.json');
    writeFileSync(
      file,
      JSON.stringify({
        name: 'cache',
        scope: 'site',
        delivers: 'a cache',
        replicated: true,
        serves: [{ name: 'get', args: [{ name: 'key', type: 'String', required: true }] }],
      }),
    );
    expect((await meshctl(['seats', 'define', '--file', file, '--why', 'a new seat'])).stdout).toMatch(/serves:\s+get\(key!\)/);
    expect((await meshctl(['seats', 'rename', 'cache', 'kv-cache'])).stdout).toBe('renamed cache to kv-cache; aliases: cache\n');
    const again = await meshctl(['seats', 'rename', 'cache', 'kv-cache']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^error INVALID: /);
    expect((await meshctl(['seats', 'define', '--file', join(dir, 'missing.json')])).code).toBe(2);
  });

  test('push --tiers --follow shows progress until the plan ends; plans lists it; plans stop, resume and close act on it', async () => {
    const child = spawn(process.execPath, [MESHCTL_BUNDLE, 'push', 'queue', 'build-1', '--why', 'release 1', '--tiers', 'cli-a1', '--follow'], {
      env: { ...process.env, MESH_URL: gateway.url, MESH_TOKEN: ADMIN },
    });
    let progress = '';
    child.stderr.on('data', (chunk) => {
      progress += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    // A failing expectation below must not leave the follower running after the file.
    onTestFinished(() => void child.kill());
    await eventually(() => /OPEN tier 1\/1: 0 ok, 0 failed, 1 waiting/.test(progress), 'the progress of the plan', 20_000);
    const plan = (await json(['plans', '--state', 'OPEN'])).plans.find((p: { build: string }) => p.build === 'build-1');
    expect(plan).toMatchObject({ seat: 'queue', state: 'OPEN', tiers: [['cli-a1']] });
    expect((await meshctl(['plans'])).stdout).toMatch(new RegExp(`${plan.id}\\s+queue\\s+build-1\\s+OPEN\\s+tier 1/1: 0 ok, 0 failed, 1 waiting`));
    expect((await meshctl(['plans', 'stop', plan.id, '--why', 'wrong build'])).stdout).toMatch(/state:\s+STOPPED/);
    expect(await exited).toBe(0);
    expect(progress).toMatch(/STOPPED .* — wrong build/);
    expect((await meshctl(['plans', 'resume', plan.id, '--why', 'try again'])).stdout).toMatch(/state:\s+OPEN/);
    expect((await meshctl(['plans', 'close', plan.id, '--why', 'done with it'])).stdout).toMatch(/state:\s+CLOSED/);
    const closed = await meshctl(['plans', 'close', plan.id, '--why', 'again']);
    expect(closed).toMatchObject({ code: 1, stderr: `error CONFLICT: plan ${plan.id} is already CLOSED\n` });
    expect((await meshctl(['push', 'queue', 'build-2'])).code).toBe(2); // --why is required
  }, 60_000);

  test('call-verb --arg, calls --seat --state and call ID', async () => {
    const sub = nc.subscribe(`${env.subjects}.seat.queue.depth`, {
      callback: (_err, msg) => {
        msg.respond(JSON.stringify({ ok: true, answer: { depth: 3, queue: msg.json<{ queue: string }>().queue } }));
      },
    });
    await nc.flush();
    try {
      const called = await json(['call-verb', 'queue', 'depth', '--arg', 'queue=orders']);
      expect(called.callVerb.data).toMatchObject({ seat: 'queue', verb: 'depth', state: 'OK', answerJson: { depth: 3, queue: 'orders' } });
      const id = called.callVerb.data.id;
      expect((await meshctl(['calls', '--seat', 'queue', '--state', 'OK'])).stdout).toMatch(new RegExp(`${id}\\s+queue\\s+depth\\s+ops\\s+OK`));
      expect((await meshctl(['call', id])).stdout).toMatch(/answer:\s+\{"depth":3,"queue":"orders"\}/);
      const bad = await meshctl(['call-verb', 'queue', 'depth', '--arg', 'colour=red']);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/^error INVALID: queue.depth takes no argument "colour"/);
    } finally {
      sub.unsubscribe();
    }
  });

  test('consumers reset acts on a real JetStream consumer', async () => {
    const { jetstreamManager } = await import('@nats-io/jetstream');
    const jsm = await jetstreamManager(nc);
    const stream = `${env.controller}_cli_jobs`.replace(/-/g, '_');
    await jsm.streams.add({ name: stream, subjects: [`${env.subjects}.jobs`] });
    await jsm.consumers.add(stream, { durable_name: 'workers', ack_policy: 'explicit' as never });
    try {
      expect((await meshctl(['consumers', 'reset', stream, 'workers', '--why', 'stuck'])).stdout).toMatch(/deliverPolicy:\s+all/);
    } finally {
      await jsm.streams.delete(stream);
    }
  });
});

describe('exit codes and access', () => {
  test('a refused mutation prints error CODE: message and exits 1; a read-only token still reads', async () => {
    const refused = await meshctl(['record-hand-act', 'x', '--why', 'y'], { token: READER });
    expect(refused).toMatchObject({ code: 1, stderr: 'error FORBIDDEN: viewer may not run recordHandAct: it needs the act scope\n' });
    expect((await meshctl(['seats'], { token: READER })).code).toBe(0);
    const noToken = await meshctl(['seats'], { token: '' });
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toMatch(/^error FORBIDDEN: /);
  });

  test('an unreachable gateway exits 3 naming the URL; usage errors exit 2; --help lists every flag, of meshctl and of a command', async () => {
    const down = await meshctl(['status'], { url: 'http://127.0.0.1:9/graphql' });
    expect(down.code).toBe(3);
    expect(down.stderr).toMatch(/could not reach the gateway at http:\/\/127\.0\.0\.1:9\/graphql/);
    expect((await meshctl(['no-such-command'])).code).toBe(2);
    const top = await meshctl(['--help']);
    expect(top.code).toBe(0);
    for (const flag of ['--url', '--token', '--json', '--help']) expect(top.stdout).toContain(flag);
    const push = commands().find((c) => c.path === 'push')!;
    const pushFlags = flagsOf(push.command);
    expect(pushFlags).toEqual(expect.arrayContaining(['--why', '--cause', '--behind', '--tiers', '--follow']));
    const help = await meshctl(['push', '--help']);
    expect(help.code).toBe(0);
    for (const flag of pushFlags) expect(help.stdout).toContain(flag);
  });

  test("every command's help lists every flag it takes", () => {
    const all = commands();
    expect(all.map((c) => c.path)).toEqual(expect.arrayContaining(['status', 'push', 'plans', 'token new']));
    for (const { path, command } of all) {
      const help = command.helpInformation();
      for (const flag of flagsOf(command)) expect(help, `meshctl ${path} --help`).toContain(flag);
    }
  });

  test('token new prints a token once and the entry whose hash the gateway accepts', async () => {
    const made = await json(['token', 'new', 'robot', '--scopes', 'read,act']);
    expect(made.entry).toMatchObject({ name: 'robot', scopes: ['read', 'act'] });
    const { createHash } = await import('node:crypto');
    expect(made.entry.sha256).toBe(createHash('sha256').update(made.token).digest('hex'));
    expect((await meshctl(['token', 'new', 'bad.name'])).code).toBe(2);
  });

  test('status --watch redraws on each composition and Ctrl-C exits 0', async () => {
    const child = spawn(process.execPath, [MESHCTL_BUNDLE, 'status', '--watch'], {
      env: { ...process.env, MESH_URL: gateway.url, MESH_TOKEN: ADMIN },
    });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await eventually(() => /status \d+ composed/.test(out), 'the first summary', 20_000);
    const first = out.length;
    await gateway.gql(`mutation { recordHandAct(act: "nudge", why: "a new composition") { __typename } }`, undefined, { authorization: `Bearer ${ADMIN}` });
    await eventually(() => out.length > first && /status \d+ composed/.test(out.slice(first)), 'a redraw', 20_000);
    child.kill('SIGINT');
    expect(await exited).toBe(0);
  }, 60_000);
});

test('a --json answer larger than a pipe buffer reaches the pipe whole, read page after page', async () => {
  const { recordHeartbeats } = await import('../../src/services/machines/machines.js');
  const at = new Date();
  await recordHeartbeats(
    gateway.mesh.db,
    Array.from({ length: 600 }, (_, i) => ({
      machine: `pipe-${String(i).padStart(4, '0')}-with-a-long-name`,
      site: 'eu-9',
      modules: ['broker', 'worker'],
      at,
    })),
  );
  // A reader that starts late, as `meshctl --json … | jq` may: the pipe's buffer fills first.
  const piped = await new Promise<string>((resolve, reject) =>
    execFile(
      'sh',
      ['-c', `"${process.execPath}" "${MESHCTL_BUNDLE}" --json machines --site eu-9 --page-size 250 | (sleep 1; cat)`],
      { env: { ...process.env, MESH_URL: gateway.url, MESH_TOKEN: ADMIN }, timeout: 30_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout) => (error ? reject(error) : resolve(stdout)),
    ),
  );
  expect(piped.length).toBeGreaterThan(64 * 1024);
  // Three pages of 250, joined in name order with none twice.
  expect(JSON.parse(piped).machines.map((m: { name: string }) => m.name)).toEqual(
    Array.from({ length: 600 }, (_, i) => `pipe-${String(i).padStart(4, '0')}-with-a-long-name`),
  );
  const prefixed = await json(['machines', '--name-starts-with', 'pipe-001', '--page-size', '3']);
  expect(prefixed.machines.map((m: { name: string }) => m.name)).toEqual(Array.from({ length: 10 }, (_, i) => `pipe-001${i}-with-a-long-name`));
});

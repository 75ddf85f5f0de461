import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { useGateway } from '../fixtures/gateway.js';
import { anAgent, eventually } from '../fixtures/live.js';
import { aMachine } from '../fixtures/mesh.js';
import { MESHCTL_BUNDLE } from '../fixtures/meshctl.js';

const { gw: gateway, env } = useGateway('meshctl_follow');
let agent: Awaited<ReturnType<typeof anAgent>>;
const children: ChildProcessWithoutNullStreams[] = [];

beforeAll(async () => {
  agent = await anAgent();
  const claims = { broker: ['queue'] };
  await aMachine(gateway.mesh.db, { name: 'mf-a', site: 'eu-1', claims });
  await aMachine(gateway.mesh.db, { name: 'mf-b', site: 'eu-2', claims });
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await agent?.close();
});

/** meshctl as a person runs it, its stdout and stderr collected line by line. */
function meshctl(...args: string[]) {
  const child = spawn(process.execPath, [MESHCTL_BUNDLE, ...args], { env: { ...process.env, MESH_URL: gateway.url } });
  children.push(child);
  const out: string[] = [];
  const err: string[] = [];
  const collect = (into: string[]) => {
    let buffer = '';
    return (chunk: Buffer) => {
      buffer += chunk;
      let end: number;
      while ((end = buffer.indexOf('\n')) >= 0) {
        into.push(buffer.slice(0, end));
        buffer = buffer.slice(end + 1);
      }
    };
  };
  child.stdout.on('data', collect(out));
  child.stderr.on('data', collect(err));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, out, err, exited };
}

const recordAct = (act: string) =>
  gateway.gql(`mutation($act: String!) { recordHandAct(act: $act, why: "by hand") { __typename } }`, { act }).then((r) => {
    if (r.errors) throw new Error(JSON.stringify(r.errors));
  });

/** Records acts until the follower shows one: its subscription is then surely in place. */
async function primed(lines: string[], marker: string): Promise<void> {
  await eventually(
    async () => {
      if (lines.some((l) => l.includes(marker))) return true;
      await recordAct(`${marker}-prime`);
      return undefined;
    },
    'the follower to be subscribed',
    30_000,
    1000,
  );
}

test('meshctl hand-acts --follow prints the log, then each hand-act as it is recorded, and Ctrl-C ends it with 0', async () => {
  await recordAct('before-follow');
  const run = meshctl('hand-acts', '--follow');
  await eventually(() => run.out.some((l) => l.includes('before-follow')), 'the log listed', 30_000);
  await primed(run.out, 'ha-follow');
  await recordAct('restarted-the-broker');
  await eventually(() => run.out.some((l) => l.includes('restarted-the-broker') && l.includes('by hand')), 'the new hand-act printed', 30_000);
  // The act listed first is not printed again.
  expect(run.out.filter((l) => l.includes('before-follow'))).toHaveLength(1);
  run.child.kill('SIGINT');
  expect(await run.exited).toBe(0);
}, 90_000);

test('meshctl --json calls --follow prints each call as it starts and as it ends', async () => {
  const run = meshctl('--json', 'calls', '--follow', '--seat', gateway.config.controller);
  // A followed change, not the list printed first (which names the last test's recordHandAct calls
  // too: primed on it, the call below could be made before the subscription was in place).
  await primed(run.out, '{"callChanged"');
  const before = run.out.length;
  await recordAct('a-call-followed');
  const changes = await eventually(
    () => {
      const lines = run.out
        .slice(before)
        .filter((l) => l.startsWith('{"callChanged"'))
        .map((l) => JSON.parse(l).callChanged);
      return lines.some((c) => c.state === 'OK') ? lines : undefined;
    },
    'the call RUNNING then OK',
    30_000,
  );
  const id = changes.find((c: any) => c.state === 'OK').id;
  expect(changes.filter((c: any) => c.id === id).map((c: any) => c.state)).toEqual(['RUNNING', 'OK']);
  run.child.kill('SIGINT');
  expect(await run.exited).toBe(0);
}, 90_000);

test('meshctl push --follow follows the plan by planChanged through its tiers and exits once it is DONE', async () => {
  const run = meshctl('push', 'queue', 'mf-build', '--why', 'follow it', '--tiers', 'mf-a', '--tiers', 'mf-b', '--follow');
  const id = await eventually(() => run.out.map((l) => /plan:\s+(plan-[0-9a-z]+)/.exec(l)?.[1]).find(Boolean), 'the plan printed', 30_000).catch((e) => {
    throw new Error(`${e.message}: ${run.out.join('|')} ${run.err.join('|')}`);
  });
  await eventually(() => run.err.some((l) => l.includes('OPEN tier 1/2')), 'the first tier shown', 30_000);
  agent.report(env.subjects, 'mf-a', { plan: id, build: 'mf-build', ok: true });
  await eventually(() => run.err.some((l) => l.includes('OPEN tier 2/2')), 'the second tier shown', 30_000);
  agent.report(env.subjects, 'mf-b', { plan: id, build: 'mf-build', ok: true });
  expect(await run.exited).toBe(0);
  expect(run.err.at(-1)).toContain(`${id}: DONE`);
}, 90_000);

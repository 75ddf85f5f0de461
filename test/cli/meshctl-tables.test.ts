import { execFile } from 'node:child_process';
import { beforeAll, expect, test } from 'vitest';
import { useGateway } from '../fixtures/gateway.js';
import { anAgent, eventually } from '../fixtures/live.js';
import { MESHCTL_BUNDLE } from '../fixtures/meshctl.js';

// meshctl on a mesh of some size: every cell bounded (a list shows its first few, then +N more;
// --wide shows all), every section of `status` headed, --json unchanged.

const MACHINES = 24;
const { gw: gateway, env } = useGateway('meshctl_tables');

function meshctl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MESHCTL_BUNDLE, ...args],
      { env: { ...process.env, MESH_URL: gateway.url, MESH_TOKEN: '' }, timeout: 30_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const longest = (text: string) => Math.max(...text.split('\n').map((line) => line.length));

beforeAll(async () => {
  const agent = await anAgent(env.env.NATS_URL);
  for (let i = 0; i < MACHINES; i++) {
    const name = `tbl-${String(i).padStart(2, '0')}`;
    agent.heartbeat(env.subjects, name, { site: `site-${i % 3}`, modules: ['agent', 'broker', 'builder', 'registry'], claims: { agent: ['agent'] } });
  }
  await agent.close();
  await eventually(() => gateway.mesh.status.current()?.machines.length === MACHINES, 'every machine in status', 30_000);
}, 60_000);

test('a seat held by every machine shows its first three holders and +N more; --wide shows all; --json all', async () => {
  const run = await meshctl(['seats']);
  expect(run.code, run.stderr).toBe(0);
  const agentRow = run.stdout.split('\n').find((line) => line.startsWith('agent '));
  expect(agentRow).toMatch(/agent@tbl-00\*,agent@tbl-01\*,agent@tbl-02\* \+21 more$/);
  expect(longest(run.stdout)).toBeLessThan(120);

  const wide = await meshctl(['--wide', 'seats']);
  const wideRow = wide.stdout.split('\n').find((line) => line.startsWith('agent '));
  for (let i = 0; i < MACHINES; i++) expect(wideRow).toContain(`agent@tbl-${String(i).padStart(2, '0')}*`);
  expect(wideRow).not.toContain('more');

  const json = JSON.parse((await meshctl(['--json', 'seats'])).stdout);
  expect(json.seats.find((s: { name: string }) => s.name === 'agent').holders).toHaveLength(MACHINES);
}, 60_000);

test('machines list their modules and holdings bounded the same way', async () => {
  const run = await meshctl(['machines']);
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toMatch(/tbl-00\s+site-0\s+UP\s+\S+\s+agent,broker,builder \+1 more/);
  expect(longest(run.stdout)).toBeLessThan(160);
}, 60_000);

test('status heads every section, so an empty one reads as such rather than a bare (none)', async () => {
  const run = await meshctl(['status']);
  expect(run.code, run.stderr).toBe(0);
  const lines = run.stdout.trimEnd().split('\n');
  expect(lines).toContain('machines by site:');
  expect(lines[lines.indexOf('machines by site:') + 1]).toMatch(/^SITE\s+UP\s+LATE\s+SILENT$/);
  expect(lines.slice(-3)).toEqual(['plans open:', 'PLAN  SEAT  BUILD  STATE  PROGRESS  STOP REASON', '(none)']);
  // Every `(none)` says what is missing: under column headings, or ending a `label:` line.
  for (const [i, line] of lines.entries()) if (line.includes('(none)')) expect(line === '(none)' ? lines[i - 1] : line).toMatch(/^[A-Z ()*]+$|: \(none\)$/);
}, 60_000);

test('an empty list still shows its column headings above (none)', async () => {
  const run = await meshctl(['plans']);
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout.trimEnd().split('\n')).toEqual([expect.stringMatching(/^PLAN\s+SEAT\s+BUILD\s+STATE/), '(none)']);
}, 60_000);

import { execFile } from 'node:child_process';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { aBrowser, type Browser } from '../../fixtures/browser.js';
import { useGateway } from '../../fixtures/gateway.js';
import { anAgent, eventually } from '../../fixtures/live.js';
import { MESHCTL_BUNDLE } from '../../fixtures/meshctl.js';

// States are judged at what a gateway has heard (read from the news stream), not at what it has
// written: a gateway that cannot write its news shows the mesh as now and says on /metrics and
// /ready that its writing is behind; a gateway that cannot hear shows it is behind, and the mesh as
// it was when it last heard, so a machine that kept beating is not painted LATE because the gateway
// is late. A machine beats every 500 ms (1 s heartbeats: LATE past 1.5 s of heard news without a
// beat of its own).
const { gw, env } = useGateway('behind', { env: { MESH_HEARTBEAT_S: '1' } });
let agent: Awaited<ReturnType<typeof anAgent>>;
let beating: NodeJS.Timeout | undefined;
let browser: Browser | undefined;

beforeAll(async () => {
  agent = await anAgent();
});
afterAll(async () => {
  clearInterval(beating);
  await browser?.close();
  await agent?.close();
});

const STATUS = '{ status { composedAt heardUntil machines { name state } } }';
const origin = () => gw.url.replace(/\/graphql$/, '');

function meshctlStatus(): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [MESHCTL_BUNDLE, 'status'], { env: { ...process.env, MESH_URL: gw.url }, timeout: 30_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
    );
  });
}

const composedAfter = (afterMs: number) =>
  eventually(
    async () => {
      const { data } = await gw.gql(STATUS);
      return Date.parse(data.status.composedAt) > afterMs ? data.status : undefined;
    },
    'a composition made after the wait',
    20_000,
  );

test('a gateway that cannot write its news judges states at what it hears — not behind, a machine that beats UP — and says its writing is behind on /metrics and /ready', async () => {
  const beat = () => agent.heartbeat(env.subjects, 'steady-1', { site: 'eu-1', modules: ['agent'] });
  beat();
  beating = setInterval(beat, 500);
  await eventually(async () => {
    const { data } = await gw.gql(STATUS);
    return data?.status.machines.some((m: { name: string; state: string }) => m.name === 'steady-1' && m.state === 'UP') || undefined;
  }, 'steady-1 UP');
  const caughtUp = await gw.gql(STATUS);
  expect(Date.parse(caughtUp.data.status.composedAt) - Date.parse(caughtUp.data.status.heardUntil)).toBeLessThan(5_000);

  // The ingest stops: the beats pile up in the news stream, unwritten, and are still heard.
  const stoppedAt = Date.now();
  await gw.news.stop();
  // The last batch under way is written before the stop ends: a second or so under the whole suite's load.
  const stoppedBy = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 7_000));
  // Something else asks for a composition (as an acting verb would).
  agent.nc.publish(`${env.subjects}.compose`, JSON.stringify({ triggers: ['asked'] }));
  const composed = await composedAfter(stoppedAt + 7_000);
  expect(Date.parse(composed.composedAt) - Date.parse(composed.heardUntil)).toBeLessThan(5_000);
  expect(composed.machines).toEqual([{ name: 'steady-1', state: 'UP' }]);
  const { data: read } = await gw.gql('{ machines(state: LATE) { name } up: machines(state: UP) { name } }');
  expect(read).toEqual({ machines: [], up: [{ name: 'steady-1' }] });

  const metrics = await (await fetch(`${origin()}/metrics`)).text();
  const lag = Number(/^mesh_news_lag_seconds\S* (\S+)$/m.exec(metrics)?.[1]);
  const pending = Number(/^mesh_news_pending\S* (\S+)$/m.exec(metrics)?.[1]);
  expect(lag).toBeGreaterThan(6);
  expect(pending).toBeGreaterThan(5);
  const ready = await (await fetch(`${origin()}/ready`)).json();
  expect(ready.checks.news).toMatchObject({ ok: true, limitS: 60 });
  expect(ready.checks.news.lagS).toBeGreaterThan(6);
  expect(Date.parse(ready.checks.news.writtenUntil)).toBeLessThanOrEqual(stoppedBy + 500);
  expect(Date.parse(ready.checks.news.heardUntil)).toBeGreaterThan(stoppedAt + 6_000);
  expect(await meshctlStatus()).not.toMatch(/behind by/);
}, 90_000);

test('a gateway that cannot hear shows it is behind — heardUntil, meshctl, the dashboard — and keeps a machine that beats UP', async () => {
  // Its follower of the news stream stops: nothing after it is heard, though the machine beats on.
  const stoppedAt = Date.now();
  gw.mesh.hearing.stop();
  await new Promise((resolve) => setTimeout(resolve, 7_000));
  agent.nc.publish(`${env.subjects}.compose`, JSON.stringify({ triggers: ['asked'] }));
  const behind = await composedAfter(stoppedAt + 7_000);
  expect(Date.parse(behind.composedAt) - Date.parse(behind.heardUntil)).toBeGreaterThan(6_000);
  expect(Date.parse(behind.heardUntil)).toBeLessThanOrEqual(stoppedAt + 500);
  // Its last beat heard is over 1.5 s before the composition, yet it is UP: news past it is not heard.
  expect(behind.machines).toEqual([{ name: 'steady-1', state: 'UP' }]);

  const printed = await meshctlStatus();
  expect(printed).toMatch(/behind by \d+ s: news up to \S+ is heard, machines shown as then/);

  // The dashboard says so on its composition line, and paints the machine UP.
  browser = await aBrowser();
  await browser.page.goto(`${origin()}/`);
  await expect.poll(() => browser!.page.locator('#composition').textContent(), { timeout: 15_000 }).toMatch(/behind by \d+ s: news up to \S+ is heard/);
  expect(await browser.page.locator('#composition').getAttribute('class')).toContain('lagging');
  expect(await browser.page.locator('.m[data-name="steady-1"]').getAttribute('data-state')).toBe('UP');
  await browser.screenshot('dashboard-behind.png');
  expect(browser.foreign).toEqual([]);
}, 90_000);

import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePort } from '../../src/bus/nats.js';
import { aBrowser, type Browser } from '../fixtures/browser.js';
import { type ChildGateway, spawnGateway } from '../fixtures/child.js';
import { anAgent } from '../fixtures/live.js';
import { type TestEnv, testEnv } from '../fixtures/services.js';

let env: TestEnv;
let gateway: ChildGateway;
let port: number;
let browser: Browser;
let agent: Awaited<ReturnType<typeof anAgent>>;
let beating: NodeJS.Timeout;
/** Machines heartbeating; `b2` stops once the page showed all five UP, and turns SILENT. */
const ALIVE = new Set(['a1', 'a2', 'a3', 'b1', 'b2']);
/** LATE past 3 s, SILENT past 12 s without a heartbeat. */
const HEARTBEAT_S = '2';

const modules = (name: string) => (name === 'a3' ? { modules: ['agent'] } : { modules: ['broker'], claims: { broker: ['queue'] } });
const site = (name: string) => (name.startsWith('a') ? 'eu-1' : 'us-1');

async function start(): Promise<ChildGateway> {
  gateway = await spawnGateway({ ...env.env, PORT: String(port), MESH_HEARTBEAT_S: HEARTBEAT_S });
  return gateway;
}

beforeAll(async () => {
  env = await testEnv('dashboard');
  port = await freePort();
  await start();
  agent = await anAgent(env.env.NATS_URL);
  beating = setInterval(() => {
    for (const name of ALIVE) agent.heartbeat(env.subjects, name, { site: site(name), ...modules(name) });
  }, 500);
  browser = await aBrowser();
});
afterAll(async () => {
  clearInterval(beating);
  await browser?.close();
  await agent?.close();
  await gateway?.kill();
  await env?.cleanup();
});

/** What a person reads in the totals: machines counted in `state`. */
const count = (state: string) => browser.page.locator(`#machine-counts .count[data-state="${state}"]`).getAttribute('data-count');

test('the dashboard at / shows the live mesh: machine counts by state, a machine turning SILENT, a plan’s tier progress, and recovers after the gateway restarts', async () => {
  const { page } = browser;
  const origin = new URL(gateway.url).origin;
  const response = await page.goto(`${origin}/`);
  expect(response?.status()).toBe(200);
  await expect.poll(() => page.locator('#connection').getAttribute('data-state'), { timeout: 15_000 }).toBe('live');

  // Five machines in two sites, all UP at first.
  await expect.poll(() => count('UP'), { timeout: 15_000 }).toBe('5');
  await expect.poll(() => page.locator('#sites .site').count()).toBe(2);
  expect(await page.locator('#sites .site[data-site="eu-1"] .m').count()).toBe(3);

  // b2 stops heartbeating: LATE, then SILENT, the others UP.
  ALIVE.delete('b2');
  await expect.poll(() => page.locator('.m[data-name="b2"]').getAttribute('data-state'), { timeout: 20_000, interval: 100 }).toBe('LATE');
  await expect.poll(() => count('SILENT'), { timeout: 30_000, interval: 200 }).toBe('1');
  expect(await count('UP')).toBe('4');
  expect(await page.locator('.m[data-name="b2"]').getAttribute('data-state')).toBe('SILENT');

  // A click shows a machine's modules and holdings.
  await page.locator('.m[data-name="a1"]').click();
  await expect.poll(() => page.locator('#machine-detail').textContent()).toContain('queue by broker (derived)');

  // A plan of two tiers; one machine of the first reports: tier 1 of 2, 1/2 reported.
  const pushed = await gateway.gql(
    `mutation { push(seat: "queue", build: "build-9", tiers: [["a1", "a2"], ["b1"]], why: "the dashboard test") { __typename ... on MutationPushSuccess { data { id } } ... on Error { message } } }`,
  );
  const planId = pushed.data.push.data?.id;
  expect(planId, JSON.stringify(pushed)).toBeTruthy();
  await expect.poll(() => page.locator(`.plan[data-plan="${planId}"] .tier`).textContent(), { timeout: 15_000 }).toContain('tier 1 of 2');
  agent.report(env.subjects, 'a1', { plan: planId, build: 'build-9', ok: true, detail: 'applied' });
  await expect.poll(() => page.locator(`.plan[data-plan="${planId}"] .tier`).textContent(), { timeout: 15_000 }).toContain('1/2 reported · 1 ok · 0 failed');

  // Seats: queue is held (by derivation), and unheld seats are counted.
  await expect.poll(() => page.locator('#seats tr[data-seat="queue"]').textContent()).toContain('a1/broker (derived)');
  await browser.screenshot('dashboard.png');

  // The gateway restarts: the page shows it disconnected, then live again with the same mesh.
  await gateway.stop();
  await expect.poll(() => page.locator('#connection').getAttribute('data-state'), { timeout: 10_000, interval: 100 }).toBe('reconnecting');
  await start();
  await expect.poll(() => page.locator('#connection').getAttribute('data-state'), { timeout: 20_000 }).toBe('live');
  await expect.poll(() => count('UP'), { timeout: 15_000 }).toBe('4');
  expect(await count('SILENT')).toBe('1');
  expect(browser.foreign).toEqual([]);
}, 120_000);

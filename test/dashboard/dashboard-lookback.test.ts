import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePort } from '../../src/bus/nats.js';
import { aBrowser, type Browser } from '../fixtures/browser.js';
import { type ChildGateway, spawnGateway } from '../fixtures/child.js';
import { anAgent } from '../fixtures/live.js';
import { type TestEnv, testEnv } from '../fixtures/services.js';

let env: TestEnv;
let gateway: ChildGateway;
let origin: string;
let browser: Browser;
let agent: Awaited<ReturnType<typeof anAgent>>;
let beating: NodeJS.Timeout;
/** Machines heartbeating; `w2` stops once the page showed them all UP, and goes LATE then SILENT. */
const ALIVE = new Set(['w1', 'w2', 'w3', 'x1']);
/** LATE past 3 s, SILENT past 12 s without a heartbeat. */
const HEARTBEAT_S = '2';
/** Three of the page's side-fetch gaps (SIDE_FETCH_GAP_MS, 1 s) without a request before the idle window. */
const QUIET_BEFORE_MS = 3_000;
const site = (name: string) => (name.startsWith('w') ? 'west' : 'east');
/** When every machine was UP, as the page's own clock saw it. */
let allUpAt: string;

beforeAll(async () => {
  env = await testEnv('dash_lookback');
  const port = await freePort();
  gateway = await spawnGateway({ ...env.env, PORT: String(port), MESH_HEARTBEAT_S: HEARTBEAT_S });
  origin = new URL(gateway.url).origin;
  agent = await anAgent(env.env.NATS_URL);
  beating = setInterval(() => {
    for (const name of ALIVE) agent.heartbeat(env.subjects, name, { site: site(name), modules: ['broker'], claims: { broker: ['queue'] } });
  }, 500);
  browser = await aBrowser();
}, 90_000);
afterAll(async () => {
  clearInterval(beating);
  await browser?.close();
  await agent?.close();
  await gateway?.kill();
  await env?.cleanup();
});

const cellState = (name: string) => browser.page.locator(`#sites .m[data-name="${name}"]`).getAttribute('data-state');
const visibleCells = () => browser.page.locator('#sites .m:visible').evaluateAll((cells) => cells.map((c) => (c as HTMLElement).dataset.name).sort());

test('the timeline is drawn, a machine goes LATE then SILENT, and its click shows that history as a strip of states', async () => {
  const { page } = browser;
  await page.goto(`${origin}/`);
  await expect.poll(() => page.locator('#connection').getAttribute('data-state'), { timeout: 20_000 }).toBe('live');
  await expect.poll(() => page.locator('#machine-counts .count[data-state="UP"]').getAttribute('data-count'), { timeout: 20_000 }).toBe('4');
  allUpAt = new Date().toISOString();
  await expect.poll(() => page.locator('[data-testid="timeline"] rect.seg').count(), { timeout: 15_000 }).toBeGreaterThan(0);

  ALIVE.delete('w2');
  await expect.poll(() => cellState('w2'), { timeout: 20_000, interval: 100 }).toBe('LATE');
  await expect.poll(() => cellState('w2'), { timeout: 30_000, interval: 200 }).toBe('SILENT');
  // The timeline follows the live compositions: a SILENT bar without another request.
  await expect.poll(() => page.locator('[data-testid="timeline"] rect.seg.SILENT').count(), { timeout: 15_000 }).toBeGreaterThan(0);

  await page.locator('#sites .m[data-name="w2"]').click();
  const strip = page.locator('[data-testid="machine-history"][data-machine="w2"]');
  await expect
    .poll(() => strip.locator('rect').evaluateAll((rects) => rects.map((r) => (r as SVGElement).dataset.state)), { timeout: 15_000 })
    .toEqual(['UP', 'LATE', 'SILENT']);
  expect(new URL(page.url()).searchParams.get('machine')).toBe('w2');
  await browser.screenshot('dashboard-machine-history.png');
}, 120_000);

test('choosing a past instant shows the machines as they were under a banner, and one click goes back to live', async () => {
  const { page } = browser;
  // Chosen on the timeline: somewhere in the kept history, so the banner shows.
  const box = (await page.locator('[data-testid="timeline"]').boundingBox())!;
  await page.mouse.click(box.x + box.width * 0.02, box.y + box.height / 2);
  await expect.poll(() => page.locator('[data-testid="viewing-past"]').isVisible()).toBe(true);
  await expect.poll(() => new URL(page.url()).searchParams.get('at')).not.toBeNull();

  // A link to the instant every machine was UP (with the machine chosen) shows w2 UP, though it is SILENT now.
  const link = `${origin}/?at=${encodeURIComponent(allUpAt)}&machine=w2`;
  await page.goto(link);
  await expect.poll(() => page.locator('[data-testid="viewing-past"]').isVisible(), { timeout: 15_000 }).toBe(true);
  await expect.poll(() => page.locator('#viewing-past').getAttribute('data-seq'), { timeout: 15_000 }).not.toBeNull();
  await expect.poll(() => page.locator('#viewing-past-text').textContent()).toContain('Viewing the past');
  expect(await cellState('w2')).toBe('UP');
  expect(await page.locator('#machine-counts .count[data-state="UP"]').getAttribute('data-count')).toBe('4');
  await expect.poll(() => page.locator('[data-testid="machine-history"][data-machine="w2"] rect').count(), { timeout: 15_000 }).toBeGreaterThan(0);
  await expect.poll(() => page.locator('[data-testid="timeline"] line.mark').count()).toBe(1);
  await browser.screenshot('dashboard-viewing-past.png');

  await page.locator('#back-to-live').click();
  await expect.poll(() => page.locator('[data-testid="viewing-past"]').isVisible()).toBe(false);
  await expect.poll(() => cellState('w2'), { timeout: 15_000 }).toBe('SILENT');
  expect(new URL(page.url()).searchParams.get('at')).toBeNull();
  expect(new URL(page.url()).searchParams.get('machine')).toBe('w2');
}, 120_000);

test('the filter narrows the grid by name, site and state as one types, and is kept in the address', async () => {
  const { page } = browser;
  await page.locator('#machine-filter').fill('w');
  await expect.poll(visibleCells).toEqual(['w1', 'w2', 'w3']);
  await page.locator('#machine-filter').fill('east');
  await expect.poll(visibleCells).toEqual(['x1']);
  expect(await page.locator('#filter-count').textContent()).toBe('1 shown');
  expect(await page.locator('.site[data-site="west"]').isVisible()).toBe(false);
  await page.locator('#machine-filter').fill('');
  await page.locator('#machine-state-filter').selectOption('SILENT');
  await expect.poll(visibleCells).toEqual(['w2']);
  expect(new URL(page.url()).searchParams.get('state')).toBe('SILENT');
  await browser.screenshot('dashboard-filter.png');
  // The same link shows the same filter.
  await page.goto(page.url());
  await expect.poll(() => page.locator('#connection').getAttribute('data-state'), { timeout: 20_000 }).toBe('live');
  await expect.poll(visibleCells, { timeout: 15_000 }).toEqual(['w2']);
  await page.locator('#machine-state-filter').selectOption('');
  await expect.poll(visibleCells).toEqual(['w1', 'w2', 'w3', 'x1']);
}, 120_000);

test('an idle page sends no request over 10 s, while hand-acts, calls and plans arrive live over its socket', async () => {
  const { page } = browser;
  await page.goto(`${origin}/`);
  await expect.poll(() => page.locator('#connection').getAttribute('data-state'), { timeout: 20_000 }).toBe('live');
  // The page's first requests (the timeline's history, calls, hand-acts, applies, durations) settle.
  await expect.poll(() => page.locator('[data-testid="timeline"] rect.seg').count(), { timeout: 15_000 }).toBeGreaterThan(0);
  await page.waitForLoadState('networkidle');
  const requests: string[] = [];
  let lastRequestAt = Date.now();
  page.on('request', (r) => {
    lastRequestAt = Date.now();
    requests.push(`${r.method()} ${r.url()} ${r.postData() ?? ''}`.slice(0, 200));
  });

  // Live meanwhile, with machines heartbeating: a hand-act, and a plan's tier progress.
  const act = await gateway.gql(`mutation { recordHandAct(act: "restarted-broker", target: "w1", why: "stuck queue") { __typename } }`);
  expect(act.data.recordHandAct.__typename).toBe('MutationRecordHandActSuccess');
  await expect.poll(() => page.locator('#hand-acts').textContent(), { timeout: 15_000 }).toContain('restarted-broker w1: stuck queue');
  const pushed = await gateway.gql(
    `mutation { push(seat: "queue", build: "lb-1", tiers: [["w1", "w3"]], why: "live panels") { ... on MutationPushSuccess { data { id } } } }`,
  );
  const planId = pushed.data.push.data.id;
  agent.report(env.subjects, 'w1', { plan: planId, build: 'lb-1', ok: true });
  await expect.poll(() => page.locator(`.plan[data-plan="${planId}"] .tier`).textContent(), { timeout: 15_000 }).toContain('1/2 reported · 1 ok');
  // The report recorded an apply duration: the page asked for durations once, on that change.
  await expect.poll(() => page.locator('#durations tr[data-kind="APPLY"]').textContent(), { timeout: 15_000 }).toContain('0 of 1');
  // The page spaces its side fetches a second apart, so the report's plan change can still ask
  // once more after the row shows: the window starts once no request came for QUIET_BEFORE_MS.
  await expect.poll(() => Date.now() - lastRequestAt, { timeout: 20_000, interval: 250 }).toBeGreaterThanOrEqual(QUIET_BEFORE_MS);
  requests.length = 0;

  // Ten seconds of an idle page (the machines still heartbeating, compositions still coming).
  const started = Date.now();
  const seqBefore = Number(await page.locator('#composition').getAttribute('data-seq'));
  await expect.poll(() => Date.now() - started, { timeout: 15_000, interval: 500 }).toBeGreaterThanOrEqual(10_000);
  expect(Number(await page.locator('#composition').getAttribute('data-seq'))).toBeGreaterThan(seqBefore);
  expect(requests).toEqual([]);
  await browser.screenshot('dashboard-live-panels.png');
  expect(browser.foreign).toEqual([]);
}, 120_000);

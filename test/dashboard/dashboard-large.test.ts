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
/** Machines heartbeating, by site (null: none); `s2` stops once the page showed the sites, `s3` starts later. */
const ALIVE = new Map<string, string | null>([
  ['n1', 'north'],
  ['n2', 'north'],
  ['n3', 'north'],
  ['s1', 'south'],
  ['s2', 'south'],
  ['z1', null],
]);
/** LATE past 3 s, SILENT past 12 s without a heartbeat. */
const HEARTBEAT_S = '2';
/** When the page showed every machine UP, by its own clock. */
let allUpAt: string;

beforeAll(async () => {
  env = await testEnv('dash_large');
  const port = await freePort();
  gateway = await spawnGateway({ ...env.env, PORT: String(port), MESH_HEARTBEAT_S: HEARTBEAT_S });
  origin = new URL(gateway.url).origin;
  agent = await anAgent(env.env.NATS_URL);
  beating = setInterval(() => {
    for (const [name, site] of ALIVE) agent.heartbeat(env.subjects, name, { ...(site ? { site } : {}), modules: ['agent'] });
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

/** The figure a person reads in a site's row of the table of sites. */
const siteCount = (site: string, state: string) =>
  browser.page.locator(`#site-table tr[data-site="${site}"] td[data-state="${state}"]`).getAttribute('data-count');
const cells = () =>
  browser.page.locator('#sites .m').evaluateAll((list) => list.map((c) => `${(c as HTMLElement).dataset.name}:${(c as HTMLElement).dataset.state}`));
const rows = () => browser.page.locator('#site-table tbody tr:visible').evaluateAll((list) => list.map((r) => (r as HTMLElement).dataset.site));

test('past the large size the page shows the counts by site first, and a site’s grid, followed live, once it is opened', async () => {
  const { page } = browser;
  // `large=3`: the sites view from 3 machines (LARGE_MESH_MACHINES is 50,000).
  await page.goto(`${origin}/?large=3`);
  await expect.poll(() => page.locator('#connection').getAttribute('data-state'), { timeout: 20_000 }).toBe('live');
  await expect.poll(() => siteCount('north', 'UP'), { timeout: 20_000 }).toBe('3');
  await expect.poll(() => siteCount('(no site)', 'UP')).toBe('1');
  expect(await siteCount('south', 'UP')).toBe('2');
  expect(await rows()).toEqual(['north', 'south', '(no site)']);
  expect(await page.locator('#machine-counts .count[data-state="UP"]').getAttribute('data-count')).toBe('6');
  expect(await page.locator('#large-mesh').textContent()).toContain('6 machines over 3 sites');
  allUpAt = new Date().toISOString();
  // No machine's cell is drawn until a site is opened.
  expect(await cells()).toEqual([]);

  // s2 falls silent: its site's row counts it LATE, then SILENT.
  ALIVE.delete('s2');
  await expect.poll(() => siteCount('south', 'LATE'), { timeout: 20_000, interval: 200 }).toBe('1');
  expect(await siteCount('south', 'UP')).toBe('1');

  // The filter narrows the sites.
  await page.locator('#machine-filter').fill('nor');
  await expect.poll(rows).toEqual(['north']);
  await page.locator('#machine-filter').fill('');
  await expect.poll(rows).toEqual(['north', 'south', '(no site)']);

  // Opening south draws its machines alone, with the grid of the small page, and keeps it in the address.
  await page.locator('#site-table tr[data-site="south"]').click();
  await expect.poll(cells, { timeout: 10_000 }).toEqual(['s1:UP', 's2:LATE']);
  expect(await page.locator('#site-table').isVisible()).toBe(false);
  expect(new URL(page.url()).searchParams.get('site')).toBe('south');
  await expect.poll(cells, { timeout: 20_000, interval: 200 }).toEqual(['s1:UP', 's2:SILENT']);
  // A machine new to the site appears in its grid; the totals stay the mesh's.
  ALIVE.set('s3', 'south');
  await expect.poll(cells, { timeout: 15_000 }).toEqual(['s1:UP', 's2:SILENT', 's3:UP']);
  await expect.poll(() => page.locator('#machine-counts .count[data-state="UP"]').getAttribute('data-count')).toBe('6');
  await page.locator('#sites .m[data-name="s3"]').click();
  await expect.poll(() => page.locator('#machine-detail').textContent()).toContain('s3 · UP');
  await browser.screenshot('dashboard-large-site.png');

  // Back to all sites: the table again, no cell drawn; the machines of no site open like a site.
  await page.locator('#back-to-sites').click();
  await expect.poll(() => page.locator('#site-table').isVisible()).toBe(true);
  expect(await cells()).toEqual([]);
  await page.locator('#site-table tr[data-site="(no site)"]').click();
  await expect.poll(cells, { timeout: 10_000 }).toEqual(['z1:UP']);

  // A link to a site opens it at once.
  await page.goto(`${origin}/?large=3&site=north`);
  await expect.poll(cells, { timeout: 20_000 }).toEqual(['n1:UP', 'n2:UP', 'n3:UP']);
  await browser.screenshot('dashboard-large.png');
  expect(browser.foreign).toEqual([]);
}, 120_000);

test('the large mesh’s view looks back: the counts by site as they were, then the open site’s grid as it was, and back to live', async () => {
  const { page } = browser;
  await page.goto(`${origin}/?large=3&at=${encodeURIComponent(allUpAt)}`);
  await expect.poll(() => page.locator('#viewing-past').getAttribute('data-seq'), { timeout: 20_000 }).toMatch(/^\d+$/);
  // South as it was: both machines UP, s3 not there yet.
  await expect.poll(() => siteCount('south', 'SILENT'), { timeout: 10_000 }).toBe('0');
  expect(await siteCount('south', 'UP')).toBe('2');
  await page.locator('#site-table tr[data-site="south"]').click();
  await expect.poll(cells, { timeout: 10_000 }).toEqual(['s1:UP', 's2:UP']);
  await page.locator('#back-to-live').click();
  await expect.poll(cells, { timeout: 10_000 }).toEqual(['s1:UP', 's2:SILENT', 's3:UP']);
  expect(new URL(page.url()).searchParams.get('at')).toBeNull();
}, 60_000);

test('below the large size the page draws every machine as it always did, with no table of sites', async () => {
  const { page } = browser;
  await page.goto(`${origin}/`);
  await expect.poll(() => page.locator('#connection').getAttribute('data-state'), { timeout: 20_000 }).toBe('live');
  await expect.poll(async () => (await cells()).length, { timeout: 20_000 }).toBe(7);
  expect(await page.locator('#site-table').isVisible()).toBe(false);
  expect(await page.locator('#sites .site').count()).toBe(3);
}, 60_000);

test('a mesh that grows past the large size while the page shows it whole turns to the table of sites', async () => {
  const { page } = browser;
  // Seven machines, the large size eight: the page opens on the whole grid.
  await page.goto(`${origin}/?large=8`);
  await expect.poll(() => page.locator('#connection').getAttribute('data-state'), { timeout: 20_000 }).toBe('live');
  await expect.poll(async () => (await cells()).length, { timeout: 20_000 }).toBe(7);
  expect(await page.locator('#site-table').isVisible()).toBe(false);
  // An eighth machine: the page starts over as the large mesh's view, the address kept.
  ALIVE.set('e1', 'east');
  await expect.poll(() => siteCount('east', 'UP'), { timeout: 20_000 }).toBe('1');
  expect(await page.locator('#site-table').isVisible()).toBe(true);
  expect(new URL(page.url()).searchParams.get('large')).toBe('8');
}, 60_000);

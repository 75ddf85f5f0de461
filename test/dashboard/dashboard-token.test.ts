import { afterAll, beforeAll, expect, test } from 'vitest';
import { aBrowser, type Browser } from '../fixtures/browser.js';
import { useGateway } from '../fixtures/gateway.js';

let browser: Browser;
const WALL = { name: 'wall', scopes: ['read' as const], token: 'wall-token-for-the-dashboard' };
const { gw: gateway } = useGateway('dashboard_token', { tokens: [WALL] });

beforeAll(async () => {
  browser = await aBrowser();
});
afterAll(async () => {
  await browser?.close();
});

test('with tokens configured the dashboard asks for a token, says clearly when one is refused, and goes live with a good one kept for the tab only', async () => {
  const { page } = browser;
  await page.goto(`${new URL(gateway.url).origin}/`);
  await expect.poll(() => page.locator('#connection').getAttribute('data-state'), { timeout: 15_000 }).toBe('refused');
  await expect.poll(() => page.locator('#token-message').textContent()).toBe('this gateway needs a token');
  expect(await page.locator('#token').isVisible()).toBe(true);

  await page.locator('#token-input').fill('not-a-token-we-know');
  await page.locator('#token-form button').click();
  await expect.poll(() => page.locator('#token-message').textContent(), { timeout: 10_000 }).toBe('the gateway refused this token: the token is not known');
  await browser.screenshot('dashboard-token-refused.png');

  await page.locator('#token-input').fill(WALL.token);
  await page.locator('#token-form button').click();
  await expect.poll(() => page.locator('#connection').getAttribute('data-state'), { timeout: 10_000 }).toBe('live');
  expect(await page.locator('#token').isVisible()).toBe(false);
  await expect.poll(() => page.locator('#composition').getAttribute('data-seq')).toMatch(/^\d+$/);
  // Kept for this tab (sessionStorage), nowhere that outlives it.
  expect(await page.evaluate(() => [sessionStorage.length, localStorage.length, document.cookie])).toEqual([1, 0, '']);
});

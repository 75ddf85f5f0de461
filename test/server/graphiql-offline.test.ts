import { afterAll, beforeAll, expect, test } from 'vitest';
import { aBrowser, type Browser } from '../fixtures/browser.js';
import { useGateway } from '../fixtures/gateway.js';

const { gw: gateway } = useGateway('graphiql');
let browser: Browser;

beforeAll(async () => {
  browser = await aBrowser();
});
afterAll(async () => {
  await browser?.close();
});

/** Replaces the operation in GraphiQL's editor (inserted as text: no auto-closed brackets) and runs it. */
async function run(operation: string): Promise<void> {
  const { page } = browser;
  await page.locator('.graphiql-query-editor .monaco-editor').first().click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(operation);
  // GraphiQL parses the edited document after a pause; running sooner would name the previous operation.
  await page.waitForTimeout(1_000);
  await page.locator('.graphiql-execute-button').click();
}

/** The response pane's text, its non-breaking spaces read as spaces. */
// biome-ignore lint/performance/useDomNodeTextContent: Monaco lays the text out in lines; innerText reads it as shown
const result = async () => (await browser.page.locator('.graphiql-response').innerText()).replace(/\u00a0/g, ' ');

test('GraphiQL loads with the network closed, opens on a query of the mesh, and runs a query and a subscription', async () => {
  const { page } = browser;
  const violations: string[] = [];
  page.on('console', (message) => {
    if (message.text().includes('Content Security Policy')) violations.push(message.text().slice(0, 300));
  });
  const response = await page.goto(gateway.url);
  expect(response?.status()).toBe(200);
  // Served with a policy as strict as its inlined assets allow (issue 20), which the page runs under.
  expect(response!.headers()['content-security-policy']).toMatch(/default-src 'none'; script-src 'sha256-[^']+'/);
  const html = await response!.text();
  expect(html).not.toMatch(/unpkg|jsdelivr|cdn\.|googleapis/);
  await page.locator('.graphiql-execute-button').waitFor({ timeout: 20_000 });
  // biome-ignore lint/performance/useDomNodeTextContent: Monaco lays the text out in lines; innerText reads it as shown
  await expect.poll(() => page.locator('.graphiql-query-editor').innerText()).toContain('status');

  await page.locator('.graphiql-execute-button').click();
  await expect.poll(result, { timeout: 10_000 }).toContain('"composedAt"');
  expect(await result()).toContain('"seats"');

  await run('subscription Ticks { ticks(count: 3, everyMs: 200) }');
  await expect.poll(result, { timeout: 10_000 }).toContain('"ticks": 3');

  await run('subscription Live { statusChanges { seq full { seq } } }');
  await expect.poll(result, { timeout: 10_000 }).toContain('"full"');
  await browser.screenshot('graphiql.png');
  expect(browser.foreign).toEqual([]);
  expect(violations).toEqual([]);
});

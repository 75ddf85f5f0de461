import { cpus, loadavg } from 'node:os';
import { chromium, type Page } from 'playwright-core';
import type { Composition } from '../src/services/status/composition.js';
import { publishComposition } from '../src/services/status/replicating/encode.js';
import { STATUS_SEQ_JUMP_MAX } from '../src/services/status/replicating/wire.js';
import { aComposition, everyMachineHeard, oneMachineChanged } from '../test/fixtures/compositions.js';
import { startTestGateway, testEnv } from '../test/fixtures/services.js';

const QUICK = process.env.BENCH_QUICK === '1';
const MACHINES = QUICK ? 1_000 : 10_000;
/** The large mesh's view (dashboard/src/sites.ts) is measured at this size, its machines over LARGE_SITES sites. */
const LARGE_MACHINES = QUICK ? 2_000 : 1_000_000;
/** 10,000 machines a site at a million: a site opened draws a tenth of the 100,000 cells the whole page is measured at. */
const LARGE_SITES = 100;
/** The filter and the timeline are measured at these sizes. */
const LOOK_SIZES = QUICK ? [1_000] : [10_000, 100_000];
/** What is typed into the filter, a key at a time, KEY_EVERY_MS apart (a brisk typist), then erased. */
const TYPED = 'machine-0042';
const KEY_EVERY_MS = 120;
const SEATS = 50;
/** One-machine deltas, one every DELTA_EVERY_MS (faster than a gateway composes: COMPOSE_MIN_GAP_MS). */
const SMALL_DELTAS = 100;
const DELTA_EVERY_MS = 100;
/** Deltas naming every machine (a round of heartbeats heard). */
const LARGE_DELTAS = 5;
/**
 * Far above the seq the gateway's own composer reached, so the bench's compositions are the ones
 * held, yet within the jump a replica takes (STATUS_SEQ_JUMP_MAX: past it, refused as seq-jump).
 */
const SEQ_FROM = STATUS_SEQ_JUMP_MAX / 2;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? Number.NaN;
const ms = (x: number) => `${x.toFixed(2)} ms`;

/**
 * The dashboard at 10,000 machines: a real gateway whose status feed is given synthetic
 * compositions (one machine changed per delta, then every machine heard), the built page in
 * headless chromium following statusChanges. Measured in the page: each update's time (User
 * Timing `mesh:delta`, the apply plus the DOM it touches) and the frames drawn meanwhile.
 */
export async function run(): Promise<string> {
  // BENCH_DASHBOARD_LARGE_ONLY=1: only the large mesh's view (the million), not the whole page's runs before it.
  if (process.env.BENCH_DASHBOARD_LARGE_ONLY === '1') return runLarge(LARGE_MACHINES);
  const lines = [await runUpdates()];
  for (const size of LOOK_SIZES) lines.push(await runLookBack(size));
  lines.push(await runLarge(LARGE_MACHINES));
  return lines.join('\n\n');
}

interface Opened {
  page: Page;
  /** From the page asked to every cell drawn. */
  drawnMs: number;
  /** The composition the page opened on (seq SEQ_FROM). */
  first: Composition;
  publish(composition: Composition): Promise<void>;
}

/**
 * A real gateway whose status feed is given one synthetic composition of `machines`, and the built
 * page in headless chromium opened on it until every cell is drawn; `work` measures, then all stops.
 */
async function withDashboard(prefix: string, machines: number, work: (opened: Opened) => Promise<string>): Promise<string> {
  const env = await testEnv(prefix);
  const gateway = await startTestGateway(env.env);
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
  });
  try {
    const publish = (c: Composition) => publishComposition(gateway.mesh.bus.nc, gateway.mesh.subjects.status, c, gateway.mesh.statusSeal);
    const first = { ...aComposition(SEQ_FROM, machines, SEATS), controller: env.controller } as Composition;
    await publish(first);
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const opened = performance.now();
    // The whole page at every size measured here, past the large mesh's view's size too (`?large=`).
    await page.goto(`${new URL(gateway.url).origin}/?large=${machines + 1}`);
    await page.waitForFunction((n) => document.querySelectorAll('#sites .m').length === n, machines, { timeout: 180_000 });
    return await work({ page, drawnMs: performance.now() - opened, first, publish });
  } finally {
    await browser.close();
    await gateway.stop();
    await env.cleanup();
  }
}

/** Frames drawn from now: the gaps between animation frames, in `window.frames_`. A script as text: tsx's helpers (`__name`) do not exist in the page. */
const COUNT_FRAMES = `(() => {
  window.frames_ = [];
  let last = performance.now();
  const tick = (t) => { window.frames_.push(t - last); last = t; requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  performance.clearMeasures();
})()`;

function runUpdates(): Promise<string> {
  return withDashboard('bench_dashboard', MACHINES, async ({ page, drawnMs: firstPaint, first, publish }) => {
    let seq = SEQ_FROM;
    let composition = first;
    const full = await page.evaluate(() => performance.getEntriesByName('mesh:full').map((e) => e.duration));
    // Frames drawn while deltas arrive.
    await page.evaluate(COUNT_FRAMES);

    for (let i = 0; i < SMALL_DELTAS; i++) {
      composition = oneMachineChanged(composition, ++seq, (i * 97) % MACHINES);
      await publish(composition);
      await sleep(DELTA_EVERY_MS);
    }
    await page.waitForFunction((s) => document.getElementById('composition')?.dataset.seq === String(s), seq, { timeout: 30_000 });
    const small = await page.evaluate(() => performance.getEntriesByName('mesh:delta').map((e) => e.duration));
    const frames = await page.evaluate(() => (window as unknown as { frames_: number[] }).frames_.slice(1));

    await page.evaluate(() => performance.clearMeasures('mesh:delta'));
    for (let i = 0; i < LARGE_DELTAS; i++) {
      composition = everyMachineHeard(composition, ++seq);
      await publish(composition);
      await sleep(1_000);
    }
    await page.waitForFunction((s) => document.getElementById('composition')?.dataset.seq === String(s), seq, { timeout: 30_000 });
    const large = await page.evaluate(() => performance.getEntriesByName('mesh:delta').map((e) => e.duration));
    const heap = await page.evaluate(() => (performance as unknown as { memory?: { usedJSHeapSize: number } }).memory?.usedJSHeapSize ?? 0);

    return [
      `machines: ${MACHINES}, seats: ${SEATS}; chromium headless (${cpus().length} cores, load ${loadavg()[0]?.toFixed(1)}); the gateway in the bench's process`,
      `page open to ${MACHINES} cells drawn: ${ms(firstPaint)} (the first full composition applied in ${ms(full[0] ?? Number.NaN)})`,
      `one machine changed, ${small.length} deltas every ${DELTA_EVERY_MS} ms: update p50 ${ms(quantile(small, 0.5))}, p99 ${ms(quantile(small, 0.99))}, max ${ms(Math.max(...small))}`,
      `  frames meanwhile: ${frames.length}, p50 ${ms(quantile(frames, 0.5))}, p99 ${ms(quantile(frames, 0.99))}, longest ${ms(Math.max(...frames))}`,
      `every machine heard (a delta of ${MACHINES} changed), ${large.length} deltas: update p50 ${ms(quantile(large, 0.5))}, max ${ms(Math.max(...large))}`,
      `page JS heap: ${(heap / 2 ** 20).toFixed(1)} MB`,
    ].join('\n');
  });
}

/**
 * The filter and the timeline at `machines`: the page opened on one composition of that size,
 * then the filter typed a key at a time and erased (User Timing `mesh:filter`: the grid narrowed,
 * every cell's visibility judged; frames meanwhile: the style and layout it caused), and the
 * timeline drawn for each live composition (`mesh:timeline`) while one-machine deltas arrive.
 */
function runLookBack(machines: number): Promise<string> {
  return withDashboard('bench_dashboard_look', machines, async ({ page, drawnMs: drawn, first, publish }) => {
    let seq = SEQ_FROM;
    let composition = first;
    await page.evaluate(COUNT_FRAMES);
    const filter = page.locator('#machine-filter');
    await filter.click();
    for (const key of TYPED) {
      await page.keyboard.type(key);
      await sleep(KEY_EVERY_MS);
    }
    const shown = await page.evaluate(() => document.querySelectorAll('#sites .m:not([hidden])').length);
    for (let i = 0; i < TYPED.length; i++) {
      await page.keyboard.press('Backspace');
      await sleep(KEY_EVERY_MS);
    }
    await page.waitForFunction((n) => document.querySelectorAll('#sites .m:not([hidden])').length === n, machines, { timeout: 30_000 });
    const keys = await page.evaluate(() => performance.getEntriesByName('mesh:filter').map((e) => e.duration));
    const typingFrames = await page.evaluate(() => (window as unknown as { frames_: number[] }).frames_.slice(1));

    await page.evaluate(() => {
      (window as unknown as { frames_: number[] }).frames_ = [];
      performance.clearMeasures();
    });
    for (let i = 0; i < 20; i++) {
      composition = oneMachineChanged(composition, ++seq, (i * 97) % machines);
      await publish(composition);
      await sleep(DELTA_EVERY_MS);
    }
    await page.waitForFunction((s) => document.getElementById('composition')?.dataset.seq === String(s), seq, { timeout: 60_000 });
    const timeline = await page.evaluate(() => performance.getEntriesByName('mesh:timeline').map((e) => e.duration));
    const bars = await page.evaluate(() => document.querySelectorAll('[data-testid="timeline"] rect').length);
    return [
      `### filter and timeline at ${machines.toLocaleString('en')} machines (load ${loadavg()[0]?.toFixed(1)})`,
      `page open to ${machines} cells drawn: ${ms(drawn)}`,
      `filter "${TYPED}" typed and erased, ${keys.length} keystrokes ${KEY_EVERY_MS} ms apart (${shown} shown at the end of typing): per key p50 ${ms(quantile(keys, 0.5))}, p99 ${ms(quantile(keys, 0.99))}, max ${ms(Math.max(...keys))}`,
      `  frames meanwhile: ${typingFrames.length}, p50 ${ms(quantile(typingFrames, 0.5))}, p99 ${ms(quantile(typingFrames, 0.99))}, longest ${ms(Math.max(...typingFrames))}; over 50 ms: ${typingFrames.filter((f) => f > 50).length}`,
      `timeline drawn per live composition (${bars} bars), ${timeline.length} draws: p50 ${ms(quantile(timeline, 0.5))}, max ${ms(Math.max(...timeline))}`,
    ].join('\n');
  });
}

/**
 * The large mesh's view at `machines` machines over LARGE_SITES sites: a real gateway given one
 * synthetic composition, the page opened until its table of sites is drawn (the first paint the
 * issue asks under 2 s at a million), then a site opened until its grid is drawn; each with the
 * page's own User Timing (`mesh:sites`, `mesh:site`: the message applied and its DOM).
 */
async function runLarge(machines: number): Promise<string> {
  const env = await testEnv('bench_dashboard_large');
  const gateway = await startTestGateway(env.env);
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
  });
  try {
    const whole = aComposition(SEQ_FROM, machines, SEATS);
    const site = (i: number) => `site-${String(i % LARGE_SITES).padStart(3, '0')}`;
    const composition = { ...whole, controller: env.controller, machines: whole.machines.map((m, i) => ({ ...m, site: site(i) })) } as Composition;
    const published = performance.now();
    await publishComposition(gateway.mesh.bus.nc, gateway.mesh.subjects.status, composition, gateway.mesh.statusSeal);
    while (gateway.mesh.status.current()?.seq !== SEQ_FROM) await sleep(50);
    const heardMs = performance.now() - published;
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const opened = performance.now();
    // The view's own size (50,000) unless the quick run's mesh is smaller.
    await page.goto(`${new URL(gateway.url).origin}/${machines < 50_000 ? '?large=1000' : ''}`);
    await page.waitForFunction((n) => document.querySelectorAll('#site-table tbody tr').length === n, LARGE_SITES, { timeout: 120_000 });
    const sitesMs = performance.now() - opened;
    const sitesUpdate = await page.evaluate(() => performance.getEntriesByName('mesh:sites').map((e) => e.duration));
    const perSite = machines / LARGE_SITES;
    const clicked = performance.now();
    await page.locator('#site-table tr[data-site="site-042"]').click();
    await page.waitForFunction((n) => document.querySelectorAll('#sites .m').length === n, perSite, { timeout: 120_000 });
    const siteMs = performance.now() - clicked;
    const siteUpdate = await page.evaluate(() => performance.getEntriesByName('mesh:site').map((e) => e.duration));
    const heap = await page.evaluate(() => (performance as unknown as { memory?: { usedJSHeapSize: number } }).memory?.usedJSHeapSize ?? 0);
    return [
      `### the large mesh's view at ${machines.toLocaleString('en')} machines over ${LARGE_SITES} sites (load ${loadavg()[0]?.toFixed(1)})`,
      `the composition published to held by the gateway: ${ms(heardMs)}`,
      `page open to the table of ${LARGE_SITES} sites drawn: ${ms(sitesMs)} (the counts' first message applied in ${ms(sitesUpdate[0] ?? Number.NaN)})`,
      `a site opened to its ${perSite.toLocaleString('en')} cells drawn: ${ms(siteMs)} (its first message applied in ${ms(siteUpdate[0] ?? Number.NaN)})`,
      `page JS heap: ${(heap / 2 ** 20).toFixed(1)} MB`,
    ].join('\n');
  } finally {
    await browser.close();
    await gateway.stop();
    await env.cleanup();
  }
}

import { cpus, loadavg } from 'node:os';
import { chromium } from 'playwright-core';
import type { Composition } from '../src/services/status/composition.js';
import { publishComposition } from '../src/services/status/feed.js';
import { aComposition, everyMachineHeard, oneMachineChanged } from '../test/fixtures/compositions.js';
import { startTestGateway, testEnv } from '../test/fixtures/services.js';

const QUICK = process.env.BENCH_QUICK === '1';
const MACHINES = QUICK ? 1_000 : 10_000;
const SEATS = 50;
/** One-machine deltas, one every DELTA_EVERY_MS (faster than a gateway composes: COMPOSE_MIN_GAP_MS). */
const SMALL_DELTAS = 100;
const DELTA_EVERY_MS = 100;
/** Deltas naming every machine (a round of heartbeats heard). */
const LARGE_DELTAS = 5;
/** Far above the seq the gateway's own composer reached, so the bench's compositions are the ones held. */
const SEQ_FROM = 1_000_000_000;

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
  const env = await testEnv('bench_dashboard');
  const gateway = await startTestGateway(env.env);
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
  });
  try {
    const subject = gateway.mesh.subjects.status;
    const nc = gateway.mesh.bus.nc;
    let seq = SEQ_FROM;
    let composition: Composition = { ...aComposition(seq, MACHINES, SEATS), controller: env.controller } as Composition;
    await publishComposition(nc, subject, composition);

    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const opened = performance.now();
    await page.goto(`${new URL(gateway.url).origin}/`);
    await page.waitForFunction((n) => document.querySelectorAll('#sites .m').length === n, MACHINES, { timeout: 60_000 });
    const firstPaint = performance.now() - opened;
    const full = await page.evaluate(() => performance.getEntriesByName('mesh:full').map((e) => e.duration));
    // Frames drawn while deltas arrive: the gaps between animation frames.
    // A script as text: tsx's helpers (`__name`) do not exist in the page.
    await page.evaluate(`(() => {
      window.frames_ = [];
      let last = performance.now();
      const tick = (t) => { window.frames_.push(t - last); last = t; requestAnimationFrame(tick); };
      requestAnimationFrame(tick);
      performance.clearMeasures('mesh:delta');
    })()`);

    for (let i = 0; i < SMALL_DELTAS; i++) {
      composition = oneMachineChanged(composition, ++seq, (i * 97) % MACHINES);
      await publishComposition(nc, subject, composition);
      await sleep(DELTA_EVERY_MS);
    }
    await page.waitForFunction((s) => document.getElementById('composition')?.dataset.seq === String(s), seq, { timeout: 30_000 });
    const small = await page.evaluate(() => performance.getEntriesByName('mesh:delta').map((e) => e.duration));
    const frames = await page.evaluate(() => (window as unknown as { frames_: number[] }).frames_.slice(1));

    await page.evaluate(() => performance.clearMeasures('mesh:delta'));
    for (let i = 0; i < LARGE_DELTAS; i++) {
      composition = everyMachineHeard(composition, ++seq);
      await publishComposition(nc, subject, composition);
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
  } finally {
    await browser.close();
    await gateway.stop();
    await env.cleanup();
  }
}

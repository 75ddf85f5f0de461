import { expect, test } from 'vitest';
import { applyCutoffMs } from '../../../src/services/plans/timeouts.js';

// Which applies are past their time-out, as a pure rule: those sent before the instant from which
// a whole time-out of heard time runs up to now; time the gateway could not hear does not count
// (no report could be heard then).
const AT = 10_000_000;
const TIMEOUT = 300_000;

test('with nothing deaf, an apply sent more than its time-out before is past it', () => {
  expect(applyCutoffMs(AT, TIMEOUT, [])).toBe(AT - TIMEOUT);
});

test('a deaf span within the time-out puts the cutoff earlier by its length; one ended before it or begun after now does not', () => {
  expect(applyCutoffMs(AT, TIMEOUT, [{ fromMs: AT - 100_000, toMs: AT - 40_000 }])).toBe(AT - TIMEOUT - 60_000);
  expect(applyCutoffMs(AT, TIMEOUT, [{ fromMs: AT - 900_000, toMs: AT - TIMEOUT - 1 }])).toBe(AT - TIMEOUT);
  expect(applyCutoffMs(AT, TIMEOUT, [{ fromMs: AT + 1, toMs: AT + 5_000 }])).toBe(AT - TIMEOUT);
});

test('an outage longer than the time-out: applies sent just before it are not past it, those sent a whole time-out of heard time before are', () => {
  // Deaf for 600 s, heard again for the last 10 s: 290 s of heard time must come from before it.
  const deaf = [{ fromMs: AT - 610_000, toMs: AT - 10_000 }];
  expect(applyCutoffMs(AT, TIMEOUT, deaf)).toBe(AT - 610_000 - 290_000);
});

test('a span the cutoff reaches only once an earlier one is counted counts too', () => {
  const deaf = [
    // Past the first cutoff (AT - 300 s), reached once the later span's 100 s are added.
    { fromMs: AT - 380_000, toMs: AT - 370_000 },
    { fromMs: AT - 200_000, toMs: AT - 100_000 },
  ];
  expect(applyCutoffMs(AT, TIMEOUT, deaf)).toBe(AT - TIMEOUT - 100_000 - 10_000);
});

test('while the gateway is deaf (a span still open), only the heard time before the span counts', () => {
  const deaf = [{ fromMs: AT - 50_000, toMs: Number.POSITIVE_INFINITY }];
  expect(applyCutoffMs(AT, TIMEOUT, deaf)).toBe(AT - 50_000 - TIMEOUT);
});

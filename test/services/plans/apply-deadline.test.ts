import { expect, test } from 'vitest';
import { applyDeadlineMs } from '../../../src/services/plans/timeouts.js';

// When an apply times out, as a pure rule: its time-out after it was sent, later by the time the
// gateway could not hear within it (no report could be heard then).
const SENT = 1_000_000;
const TIMEOUT = 300_000;

test('an apply with nothing deaf times out its time-out after it was sent', () => {
  expect(applyDeadlineMs(SENT, TIMEOUT, [])).toBe(SENT + TIMEOUT);
});

test('a deaf span within the time-out puts the deadline later by its length; one ended before the send or begun after the deadline does not', () => {
  expect(applyDeadlineMs(SENT, TIMEOUT, [{ fromMs: SENT + 10_000, toMs: SENT + 610_000 }])).toBe(SENT + TIMEOUT + 600_000);
  expect(applyDeadlineMs(SENT, TIMEOUT, [{ fromMs: SENT - 50_000, toMs: SENT - 1 }])).toBe(SENT + TIMEOUT);
  expect(applyDeadlineMs(SENT, TIMEOUT, [{ fromMs: SENT + TIMEOUT, toMs: SENT + TIMEOUT + 5_000 }])).toBe(SENT + TIMEOUT);
});

test('a deaf span begun before the send counts from the send only', () => {
  expect(applyDeadlineMs(SENT, TIMEOUT, [{ fromMs: SENT - 50_000, toMs: SENT + 20_000 }])).toBe(SENT + TIMEOUT + 20_000);
});

test('a second span that falls within the deadline the first put later counts too', () => {
  const deaf = [
    { fromMs: SENT + 100_000, toMs: SENT + 200_000 },
    { fromMs: SENT + 350_000, toMs: SENT + 360_000 },
  ];
  expect(applyDeadlineMs(SENT, TIMEOUT, deaf)).toBe(SENT + TIMEOUT + 100_000 + 10_000);
});

test('while the gateway is deaf (a span still open) no apply sent before times out', () => {
  expect(applyDeadlineMs(SENT, TIMEOUT, [{ fromMs: SENT + 1_000, toMs: Number.POSITIVE_INFINITY }])).toBe(Number.POSITIVE_INFINITY);
});

import fc from 'fast-check';
import { expect, test } from 'vitest';
import { msBetweenInstants } from '../../src/kernel/values.js';

const instant = fc.date({ min: new Date('0001-01-01T00:00:00.000Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true });

test('the ms between two instants is what Date.parse says, on one day, across days and years, either way round', () => {
  fc.assert(
    fc.property(instant, fc.integer({ min: -3 * 86_400_000, max: 3 * 86_400_000 }), (a, by) => {
      const b = new Date(Math.min(Math.max(a.getTime() + by, -62135596800000), 253402300799999));
      expect(msBetweenInstants(a.toISOString(), b.toISOString())).toBe(b.getTime() - a.getTime());
    }),
    { numRuns: 2_000 },
  );
});

test('instants written otherwise (the store’s offsets, no milliseconds) are parsed', () => {
  expect(msBetweenInstants('2026-12-05T10:00:00+00:00', '2026-12-05T10:00:01.500Z')).toBe(1_500);
  expect(msBetweenInstants('2026-12-05T10:00:00Z', '2026-12-05T11:00:00+01:00')).toBe(0);
  expect(msBetweenInstants('2026-12-05T23:59:59.999Z', '2026-12-06T00:00:00.000Z')).toBe(1);
  expect(Number.isNaN(msBetweenInstants('not an instant', '2026-12-05T10:00:00.000Z'))).toBe(true);
});

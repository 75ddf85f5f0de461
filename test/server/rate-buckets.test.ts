import { expect, test } from 'vitest';
import { OperationRate } from '../../src/server/rate-limit.js';

// With JWT sign-in callers are an identity provider's users, not a file's few names: the rate's
// buckets must not grow with every `sub` ever seen.

test('the buckets of callers idle for the burst are dropped once there are many, while a caller active since keeps its bucket', () => {
  let now = 0;
  const rate = new OperationRate(1, () => now);
  for (let i = 0; i < 10_000; i++) rate.take(`user-${i}`);
  // A busy caller spends its burst (2 operations at 1 a second) and is refused: rates still apply.
  expect([rate.take('busy'), rate.take('busy'), rate.take('busy')]).toEqual([0, 0, 1]);
  now = 2_500;
  rate.take('busy');
  rate.take('newcomer');
  // biome-ignore lint/complexity/useLiteralKeys: the buckets are private; bracket access is how TypeScript lets a test read them.
  const buckets = rate['buckets'] as Map<string, unknown>;
  expect(buckets.size).toBeLessThanOrEqual(2);
  expect(buckets.has('busy')).toBe(true);
});

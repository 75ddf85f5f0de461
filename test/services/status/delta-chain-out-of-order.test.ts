import pino from 'pino';
import { afterEach, expect, test, vi } from 'vitest';
import type { Composition } from '../../../src/services/status/composition.js';
import { diffCompositions } from '../../../src/services/status/delta/algebra.js';
import { deltaChain, RESYNC_AGAIN_MS } from '../../../src/services/status/replicating/stream-follower.js';
import type { StreamEntry } from '../../../src/services/status/replicating/wire.js';
import { aComposition } from '../../fixtures/compositions.js';

// Seen once in `bench badday` at 100,000 machines: a replica woken from a 20 s SIGSTOP held
// composition 58 and was handed delta 59→60 before delta 58→59 (the live path and the stream's
// race after a freeze). Its chain broke, and every delta after it was skipped until a snapshot came,
// so it held 58 for up to a minute — and the composition a takeover starts from is the one held.

afterEach(() => vi.useRealTimers());

const logger = pino({ level: 'silent' });
const delta = (a: Composition, b: Composition): StreamEntry => ({
  kind: 'delta',
  seq: b.seq,
  delta: diffCompositions(a, b),
  snapshotAt: undefined,
  streamSeq: b.seq,
  time: 0,
});

function aFollowedFeed(first: Composition) {
  let held = first;
  const resyncs: number[] = [];
  const feed = { current: () => held, accept: (c: Composition) => (held = c) };
  const chain = deltaChain(feed, { snapshots: 0, deltas: 0, gaps: 0 }, logger, (seq) => resyncs.push(seq));
  return { chain, held: () => held.seq, resyncs };
}

test('a delta handed before the one it is based on breaks the chain, and the one on the seq held mends it: the deltas after apply again', () => {
  const [c58, c59, c60, c61] = [58, 59, 60, 61].map((seq) => aComposition(seq, 20));
  const { chain, held, resyncs } = aFollowedFeed(c58!);
  chain.take(delta(c59!, c60!));
  expect(chain.isBroken()).toBe(true);
  expect(resyncs).toEqual([58]);

  chain.take(delta(c58!, c59!));
  expect(chain.isBroken()).toBe(false);
  expect(held()).toBe(59);
  chain.take(delta(c59!, c60!));
  chain.take(delta(c60!, c61!));
  expect(held()).toBe(61);
});

test('a chain still broken asks for the snapshot again every RESYNC_AGAIN_MS, not only once', () => {
  vi.useFakeTimers();
  const [c10, c12, c13, c14] = [10, 12, 13, 14].map((seq) => aComposition(seq, 20));
  const { chain, resyncs } = aFollowedFeed(c10!);
  chain.take(delta(c12!, c13!));
  chain.take(delta(c13!, c14!));
  expect(resyncs).toEqual([10]);
  vi.advanceTimersByTime(RESYNC_AGAIN_MS);
  chain.take(delta(c13!, c14!));
  expect(resyncs).toEqual([10, 10]);
  expect(chain.isBroken()).toBe(true);
});

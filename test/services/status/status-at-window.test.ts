import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Composition } from '../../../src/services/status/composition.js';
import { diffCompositions } from '../../../src/services/status/delta/delta.js';
import { startStatusFeed } from '../../../src/services/status/live/feed.js';
import { StatusHistory } from '../../../src/services/status/looking-back/history.js';
import { type RunningLookBackIndex, startLookBackIndex } from '../../../src/services/status/looking-back/look-back-index.js';
import { RecentWindow } from '../../../src/services/status/looking-back/recent-window.js';
import { StreamDirectory } from '../../../src/services/status/looking-back/stream-directory.js';
import { aComposition, oneMachineChanged, randomNext, rng } from '../../fixtures/compositions.js';
import { eventually } from '../../fixtures/live.js';
import { NATS_URL } from '../../fixtures/services.js';
import { aStatusStream } from '../../fixtures/status-stream.js';

// statusAt of the last minutes is answered from the replica's window of compositions as heard
// (checkpoints, and the machines each composition changed), in memory: the same composition the
// status stream rebuilds, on the replica that put it and on one that follows the stream. A stream
// and feeds of their own, no composer.

const WINDOW = { bytesMax: 2 ** 30, compositionsMax: 1_000, checkpointEveryMs: 6_000 };
let stream: Awaited<ReturnType<typeof aStatusStream>>;
let nc: NatsConnection;
let follower: ReturnType<typeof startStatusFeed>;
const indexes: RunningLookBackIndex[] = [];
let serving: StatusHistory;
let following: StatusHistory;
const seqs: number[] = [];

beforeAll(async () => {
  stream = await aStatusStream();
  nc = await connect({ servers: NATS_URL });
  // A replica that follows the stream (its own `<subjects>.status`, which nothing is sent on).
  follower = startStatusFeed(nc, `lbw_${Date.now()}.status`, pino({ level: 'silent' }), undefined, stream.link);
  serving = new StatusHistory(stream.link, stream.feed);
  following = new StatusHistory(stream.link, follower);
  indexes.push(startLookBackIndex(stream.feed, serving, pino({ level: 'silent' }), { window: WINDOW }));
  indexes.push(startLookBackIndex(follower, following, pino({ level: 'silent' }), { window: WINDOW }));
  const random = rng(3);
  let c: Composition = aComposition(500, 50);
  for (let i = 0; i < 45; i++) {
    // Machines changed in place (a step of places), a random composition (machines added, removed, reordered; every object new), a takeover's snapshot.
    await stream.feed.publish!(c, i % 15 === 0 ? 'takeover' : 'news');
    seqs.push(c.seq);
    c = i % 4 === 3 ? randomNext(c, random) : oneMachineChanged(oneMachineChanged(c, c.seq + 1), c.seq + 1, (i * 7) % c.machines.length);
  }
  await eventually(() => follower.current()?.seq === seqs.at(-1) || undefined, 'the follower holding the last composition');
  for (const index of indexes) await eventually(() => index.directory.placeOf(seqs.at(-1)!), 'the last composition placed');
});
afterAll(async () => {
  for (const index of indexes) index.stop();
  await follower?.stop();
  await nc?.close();
  await stream?.close();
});

test('statusAt from the window is what the stream rebuilds, for every composition of a run, on the replica that put it and on one following', async () => {
  const searched = new StatusHistory(stream.link, stream.feed);
  for (const [history, index] of [
    [serving, indexes[0]!],
    [following, indexes[1]!],
  ] as const) {
    // The window holds the run as checkpoints and steps, not every composition whole.
    expect(index.recent!.size).toBeGreaterThanOrEqual(seqs.length);
    expect(index.recent!.checkpoints).toBeGreaterThan(3);
    expect(index.recent!.size - index.recent!.checkpoints).toBeGreaterThan(seqs.length / 2);
    for (const seq of seqs) {
      const fromWindow = index.recent!.composition(seq);
      expect(fromWindow?.seq).toBe(seq);
      const rebuilt = await searched.statusAt({ seq });
      expect(fromWindow).toEqual(rebuilt);
      expect(await history.statusAt({ seq })).toEqual(rebuilt);
    }
  }
}, 60_000);

test('the window answers with no stream read; a composition it no longer holds is rebuilt from the stream as before', async () => {
  // The history's consumers cannot be made: only the stream's bounds can be asked.
  const unreadable = { ...stream.link, js: { consumers: { get: () => Promise.reject(new Error('no stream read')) } } as never };
  const blind = new StatusHistory(unreadable, stream.feed);
  blind.useIndex(indexes[1]!);
  const rebuilt = await new StatusHistory(stream.link, stream.feed).statusAt({ seq: seqs[20]! });
  expect(await blind.statusAt({ seq: seqs[20]! })).toEqual(rebuilt);
  // Its headers not yet read into the directory: found by searching the stream, answered from the window.
  const unplaced = new StatusHistory(unreadable, stream.feed);
  unplaced.useIndex({ ...indexes[1]!, directory: new StreamDirectory() });
  expect(await unplaced.statusAt({ seq: seqs[20]! })).toEqual(rebuilt);
  // A window bounded to its newest checkpoint: an older composition is read from the stream.
  const small = new StatusHistory(stream.link, follower);
  const index = startLookBackIndex(follower, small, pino({ level: 'silent' }), { window: { ...WINDOW, bytesMax: 1 } });
  try {
    await eventually(() => index.directory.placeOf(seqs.at(-1)!), 'the last composition placed');
    expect(index.recent!.composition(seqs[20]!)).toBeUndefined();
    expect(await small.statusAt({ seq: seqs[20]! })).toEqual(rebuilt);
    const smallBlind = new StatusHistory(unreadable, follower);
    smallBlind.useIndex(index);
    await expect(smallBlind.statusAt({ seq: seqs[20]! })).rejects.toThrow('no stream read');
  } finally {
    index.stop();
  }
});

test('the window keeps what its bound allows: the oldest checkpoint goes with its steps, the newest stays', () => {
  const window = new RecentWindow({ bytesMax: 200_000, compositionsMax: 30, checkpointEveryMs: 5_000 });
  let c = aComposition(1, 200);
  const heard: Composition[] = [];
  for (let i = 0; i < 60; i++) {
    const next = oneMachineChanged(c, c.seq + 1);
    window.hear(next, diffCompositions(c, next));
    heard.push((c = next));
  }
  expect(window.size).toBeLessThanOrEqual(30);
  expect(window.span()!.last).toBe(c.seq);
  expect(window.composition(heard[0]!.seq)).toBeUndefined();
  const first = window.span()!.first;
  for (const h of heard.filter((x) => x.seq >= first)) expect(window.composition(h.seq)).toEqual(h);
  // The bytes bound: the window shrinks to its newest checkpoint and what followed it.
  const tight = new RecentWindow({ bytesMax: 1, compositionsMax: 1_000, checkpointEveryMs: 5_000 });
  for (const h of heard) tight.hear(h);
  expect(tight.size).toBe(1);
  expect(tight.composition(c.seq)).toEqual(c);
});

import pino from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Composition } from '../../../src/services/status/composition.js';
import { StatusHistory } from '../../../src/services/status/looking-back/history.js';
import { startLookBackIndex } from '../../../src/services/status/looking-back/look-back-index.js';
import { machineHistory, machineHistoryFromStream } from '../../../src/services/status/looking-back/machine-history.js';
import { aComposition, oneMachineChanged, randomNext, rng } from '../../fixtures/compositions.js';
import { eventually } from '../../fixtures/live.js';
import { aStatusStream } from '../../fixtures/status-stream.js';

// The look-back index answers what reading the status stream answers (issue 37): the same
// changes, seqs and instants, for every machine of a random run and every window, on the replica
// that heard the run and on one that read it back from the stream. A stream and feed of their own,
// with no composer: the compositions are only the run's.

let stream: Awaited<ReturnType<typeof aStatusStream>>;
let history: StatusHistory;
let running: ReturnType<typeof startLookBackIndex>;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Instants in the middle of pauses between bursts of compositions: windows the stored time and composedAt agree on. */
const pauses: Date[] = [];
const seqs: number[] = [];
const names = new Set<string>(['never-heard']);

beforeAll(async () => {
  stream = await aStatusStream();
  history = new StatusHistory(stream.link, stream.feed);
  running = startLookBackIndex(stream.feed, history, pino({ level: 'silent' }));
  const random = rng(37);
  let c: Composition = aComposition(1000, 60);
  for (let i = 0; i < 60; i++) {
    c = { ...c, composedAt: new Date().toISOString() };
    await stream.feed.publish!(c, i % 20 === 0 ? 'takeover' : 'news');
    seqs.push(c.seq);
    for (const m of c.machines) names.add(m.name);
    if (i % 10 === 9) {
      await sleep(100);
      pauses.push(new Date());
      await sleep(100);
    }
    c = i % 3 ? randomNext(c, random) : oneMachineChanged(c, c.seq + 1);
  }
  await eventually(() => running.directory.placeOf(seqs.at(-1)!), 'the last composition placed from the stream’s headers');
});
afterAll(async () => {
  running?.stop();
  await stream?.close();
});

/** Each machine's history over several windows, as `answer` gives it. */
async function histories(answer: (name: string, since: Date, until: Date) => Promise<unknown>): Promise<unknown[]> {
  const windows: [Date, Date][] = [
    [new Date(0), pauses.at(-1)!],
    [pauses[0]!, pauses[3]!],
    [pauses[2]!, pauses[2]!],
    [pauses[4]!, pauses[5]!],
  ];
  const out: unknown[] = [];
  // Every third machine of the run (reading the stream for each is slow), and one never heard.
  const asked = [...names].filter((_, i) => i % 3 === 0);
  for (const name of asked) for (const [since, until] of windows) out.push([name, since.toISOString(), await answer(name, since, until)]);
  return out;
}

test('machineHistory from the index is what the stream says, machine by machine, window by window', async () => {
  await running.backfill;
  expect(await history.index!.covers(0)).toBe(true);
  const fromIndex = await histories((name, since, until) => machineHistory(history, { name, since, until }));
  const fromStream = await histories((name, since, until) => machineHistoryFromStream(history, name, since, until));
  expect(fromIndex).toEqual(fromStream);
  // Not a comparison of empty lists: the run changed machines.
  expect((fromIndex as [string, string, unknown[]][]).filter(([, , changes]) => changes.length > 2).length).toBeGreaterThan(5);
}, 60_000);

test('a replica that starts after the run reads it back from the stream and answers the same', async () => {
  const later = new StatusHistory(stream.link, stream.feed);
  const index = startLookBackIndex(stream.feed, later, pino({ level: 'silent' }));
  try {
    await index.backfill;
    expect(index.backfilled()).toBe(true);
    expect(index.timeline.first()!.seq).toBe(seqs[0]);
    expect(index.timeline.size).toBe(running.timeline.size);
    const fromStream = await histories((name, since, until) => machineHistoryFromStream(later, name, since, until));
    expect(await histories((name, since, until) => machineHistory(later, { name, since, until }))).toEqual(fromStream);
  } finally {
    index.stop();
  }
}, 60_000);

test('statusAt from the index rebuilds what searching the stream rebuilds, by seq and by instant', async () => {
  const indexed = history;
  const searched = new StatusHistory(stream.link, stream.feed);
  for (const seq of [seqs[1]!, seqs[19]!, seqs[20]!, seqs[44]!, seqs.at(-2)!]) {
    expect(indexed.index!.directory.placeOf(seq)).toBeDefined();
    expect(await indexed.statusAt({ seq })).toEqual(await searched.statusAt({ seq }));
  }
  for (const at of pauses.slice(0, -1)) expect((await indexed.statusAt({ at })).seq).toBe((await searched.statusAt({ at })).seq);
  // A seq between two of the run's is none: NOT_FOUND from the index as from the stream.
  await expect(indexed.statusAt({ seq: seqs[0]! - 1 })).rejects.toMatchObject({ code: 'NOT_FOUND' });
});

import { expect, test } from 'vitest';
import { CheckpointsOwed } from '../../../src/services/news/checkpoints.js';
import { HEARD_GATHER_MS } from '../../../src/services/news/heard-later.js';
import { HeardMachines } from '../../../src/services/news/heard-machines.js';
import { type HearingSource, startNewsHearing } from '../../../src/services/news/hearing.js';

test('last-heard only moves forward; the beat before one is the last, or the one before when it is the last itself', () => {
  const heard = new HeardMachines();
  heard.note('m1', 1_000, 1_000);
  heard.note('m1', 3_000, 3_500);
  heard.note('m1', 2_000, 9_000); // heard out of order: not the last
  expect(heard.lastMs('m1')).toBe(3_000);
  expect(heard.before('m1', 4_000)).toEqual({ atMs: 3_000, takenMs: 3_500 });
  expect(heard.before('m1', 3_000)).toEqual({ atMs: 2_000, takenMs: 9_000 });
  expect(heard.before('m1', 1_500)).toBeUndefined();
  expect(heard.lastHeardAt('m1', new Date(2_500).toISOString())).toBe(new Date(3_000).toISOString());
  expect(heard.lastHeardAt('m1', new Date(5_000).toISOString())).toBe(new Date(5_000).toISOString());
  expect(heard.lastHeardAt('unknown', new Date(5_000).toISOString())).toBe(new Date(5_000).toISOString());
});

test('what is owed is spread over the period, one slot a tick, each machine in one slot, counted and at its latest', () => {
  const owed = new CheckpointsOwed(300_000);
  expect(owed.slotCount).toBe(300);
  for (let i = 0; i < 3_000; i++) owed.owe(`m-${i}`, i);
  owed.owe('m-7', 10);
  const slots = Array.from({ length: owed.slotCount }, (_, i) => owed.take(i));
  expect(slots.flat()).toHaveLength(3_000);
  expect(Math.max(...slots.map((s) => s.length))).toBeLessThan(30); // about 10 a slot
  expect(slots.flat().find((c) => c.machine === 'm-7')).toEqual({ machine: 'm-7', beats: 2, lastHeardMs: 10 });
  expect(Array.from({ length: owed.slotCount }, (_, i) => owed.take(i)).flat()).toEqual([]);
  owed.giveBack([{ machine: 'm-7', beats: 2, lastHeardMs: 10 }]);
  owed.owe('m-7', 12);
  expect(Array.from({ length: owed.slotCount }, (_, i) => owed.take(i)).flat()).toEqual([{ machine: 'm-7', beats: 3, lastHeardMs: 12 }]);
});

test('machines heard later are gathered for a listener only while it wants them (the composer: while its replica serves)', async () => {
  const hearing = startNewsHearing({
    stream: 'news',
    jsm: {
      streams: { info: async () => ({ state: { first_seq: 0, last_seq: 0 } }) },
    } as unknown as HearingSource['jsm'],
  });
  try {
    let serving = false;
    const told: string[][] = [];
    hearing.onHeard(
      (names) => told.push([...names]),
      () => serving,
    );
    const gathered = () => new Promise((resolve) => setTimeout(resolve, HEARD_GATHER_MS * 3));
    hearing.machines.note('m1', 1_000, 1_000);
    await gathered();
    expect(told).toEqual([]);
    serving = true;
    hearing.machines.note('m1', 2_000, 2_000);
    hearing.machines.note('m2', 2_000, 2_000);
    await gathered();
    expect(told).toEqual([['m1', 'm2']]);
  } finally {
    hearing.stop();
  }
});

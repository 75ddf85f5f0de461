import pino from 'pino';
import { expect, test } from 'vitest';
import type { MachineStatus } from '../../../src/services/status/composition.js';
import { MACHINE_CHANGES_KEPT_MAX, MachineChanges } from '../../../src/services/status/looking-back/machine-changes.js';
import { Timeline } from '../../../src/services/status/looking-back/timeline.js';

// The look-back index without services: each machine's changes and the compositions' instants.

const m = (state: MachineStatus['state'], site = 'eu-1', modules = ['agent'], lastHeardAt = '2026-12-01T10:00:00.000Z'): MachineStatus => ({
  name: 'm-1',
  state,
  site,
  modules,
  lastHeardAt,
  holdings: [],
});

test('a machine keeps its changes only: a composition moving its last-heard instant alone records nothing', () => {
  const changes = new MachineChanges();
  changes.record('m-1', 1, 1000, m('UP'));
  changes.record('m-1', 2, 2000, m('UP', 'eu-1', ['agent'], '2026-12-01T10:00:10.000Z'));
  changes.record('m-1', 3, 3000, m('LATE'));
  changes.record('m-1', 4, 4000, m('LATE'));
  changes.record('m-1', 5, 5000, m('UP', 'eu-2', ['agent', 'broker'], '2026-12-01T10:01:00.000Z'));
  changes.record('m-1', 6, 6000, undefined);
  const { from, after } = changes.changesOf('m-1', 2, 6, 500);
  // In force at seq 2: the change of seq 1 (its own lastHeardAt, not seq 2's).
  expect(from).toMatchObject({ seq: 1, state: 'UP', site: 'eu-1', lastHeardAt: Date.parse('2026-12-01T10:00:00.000Z') });
  expect(after.map((c) => [c.seq, c.at, c.state, c.site, c.modules])).toEqual([
    [3, 3000, 'LATE', 'eu-1', ['agent']],
    [5, 5000, 'UP', 'eu-2', ['agent', 'broker']],
    [6, 6000, null, null, []],
  ]);
  // Before it was first seen it was absent; up to seq 4 only what came by then; at most `max`.
  expect(changes.changesOf('m-1', 0, 4, 500).from).toMatchObject({ state: null, site: null, modules: [] });
  expect(changes.changesOf('m-1', 0, 4, 500).after.map((c) => c.seq)).toEqual([1, 3]);
  expect(changes.changesOf('m-1', 0, 6, 2).after.map((c) => c.seq)).toEqual([1, 3]);
  expect(changes.changesOf('never', 3, 6, 500)).toEqual({ from: expect.objectContaining({ state: null }), after: [] });
});

test('changes before the trim instant go but the one in force then stays; past MACHINE_CHANGES_KEPT_MAX the oldest go and the history starts later', () => {
  const changes = new MachineChanges();
  for (let seq = 1; seq <= 10; seq++) changes.record('m-1', seq, seq * 1000, m(seq % 2 ? 'UP' : 'LATE'));
  changes.trim(5500);
  changes.record('m-1', 11, 11_000, m('SILENT'));
  // Seq 5 was in force at 5.5 s: kept; 1 to 4 went.
  expect(changes.changesOf('m-1', 5, 11, 500).from).toMatchObject({ seq: 5, state: 'UP' });
  expect(changes.changesOf('m-1', 3, 11, 500).from).toMatchObject({ state: null });

  const flapping = new MachineChanges();
  const n = MACHINE_CHANGES_KEPT_MAX + 10;
  for (let seq = 1; seq <= n; seq++) flapping.record('m-1', seq, seq, m(seq % 2 ? 'UP' : 'LATE'));
  const { from, after } = flapping.changesOf('m-1', 0, n, n);
  // What it was at seq 0 is not known any more: the history starts at the first change kept.
  expect(from).toBeUndefined();
  const kept = Math.floor((MACHINE_CHANGES_KEPT_MAX * 7) / 8);
  expect(after.length).toBe(kept + n - MACHINE_CHANGES_KEPT_MAX - 1);
  expect(after[0]!.seq).toBe(MACHINE_CHANGES_KEPT_MAX + 2 - kept);
  expect(after.at(-1)!.seq).toBe(n);
});

test('a backfill prepends the changes from before the first composition, and the first one here that only repeats them goes', () => {
  const older = new MachineChanges();
  older.record('m-1', 1, 1000, m('UP'));
  older.record('m-1', 3, 3000, m('LATE'));
  older.record('gone', 2, 2000, m('UP'));
  older.record('gone', 4, 4000, undefined);
  // Heard from seq 5 on: the seed repeats what the backfill read last; a change at 5 itself (m-2's) is left.
  const live = new MachineChanges();
  live.record('m-1', 5, 5000, m('LATE'));
  live.record('m-1', 6, 6000, m('UP'));
  live.record('m-2', 5, 5000, m('UP'));
  older.record('m-1', 5, 5000, m('SILENT'));
  live.prepend(older, 5, 5000);
  expect(live.changesOf('m-1', 0, 6, 500).after.map((c) => [c.seq, c.state])).toEqual([
    [1, 'UP'],
    [3, 'LATE'],
    [6, 'UP'],
  ]);
  expect(live.changesOf('gone', 3, 6, 500).from).toMatchObject({ seq: 2, state: 'UP' });
  expect(live.changesOf('gone', 4, 6, 500).from).toMatchObject({ seq: 4, state: null });
  expect(live.changesOf('m-2', 4, 6, 500).after.map((c) => c.seq)).toEqual([5]);
  // Shown before and not in the composition recorded whole at 5: it left then.
  const before = new MachineChanges();
  before.record('left', 2, 2000, m('UP'));
  const after = new MachineChanges();
  after.record('m-1', 5, 5000, m('UP'));
  after.prepend(before, 5, 5000);
  expect(after.changesOf('left', 1, 6, 500).after.map((c) => [c.seq, c.at, c.state])).toEqual([
    [2, 2000, 'UP'],
    [5, 5000, null],
  ]);
});

test('the timeline finds the composition in force at an instant, and keeps instants ordered when a clock went back', () => {
  const timeline = new Timeline();
  timeline.push(10, 1000);
  timeline.push(11, 2000);
  timeline.push(11, 2500);
  timeline.push(13, 1900);
  timeline.push(14, 4000);
  expect(timeline.inForceAt(999)).toBeUndefined();
  expect(timeline.inForceAt(1000)).toEqual({ seq: 10, at: 1000 });
  expect(timeline.inForceAt(2999)).toEqual({ seq: 13, at: 1900 });
  expect(timeline.atOf(12)).toBeUndefined();
  expect(timeline.atOf(13)).toBe(1900);
  const older = new Timeline();
  older.push(5, 500);
  older.push(10, 1000);
  timeline.prepend(older);
  expect(timeline.first()).toEqual({ seq: 5, at: 500 });
  timeline.trimBefore(11);
  expect(timeline.first()).toEqual({ seq: 11, at: 2000 });
  expect(timeline.size).toBe(3);
});

test('a composition heard without a delta is compared whole: a machine it does not show has left, one it shows unchanged records nothing', async () => {
  const { startLookBackIndex } = await import('../../../src/services/status/looking-back/look-back-index.js');
  const { aComposition } = await import('../../fixtures/compositions.js');
  const listeners = new Set<(c: ReturnType<typeof aComposition>) => void>();
  const first = aComposition(1, 5);
  const feed = { current: () => first, subscribe: (l: (c: ReturnType<typeof aComposition>) => void) => (listeners.add(l), () => listeners.delete(l)) };
  let index: import('../../../src/services/status/looking-back/look-back-index.js').LookBackIndex | undefined;
  const history = {
    link: undefined as never,
    bounds: async () => ({ first: 1, last: 0 }),
    entries: async function* () {},
    useIndex: (i: NonNullable<typeof index>) => (index = i),
  };
  const running = startLookBackIndex(feed, history, pino({ level: 'silent' }));
  try {
    await running.backfill;
    // Seq 3 whole (a gap): machine 2 gone, the others as they were.
    const third = {
      ...first,
      seq: 3,
      composedAt: new Date(Date.parse(first.composedAt) + 2000).toISOString(),
      machines: first.machines.filter((_, i) => i !== 2),
    };
    for (const l of listeners) l(third);
    const gone = first.machines[2]!.name;
    expect(index!.changes.changesOf(gone, 1, 3, 500).after.map((c) => [c.seq, c.state])).toEqual([[3, null]]);
    expect(index!.changes.changesOf(first.machines[0]!.name, 1, 3, 500).after).toEqual([]);
    expect(index!.changes.shown).toBe(4);
  } finally {
    running.stop();
  }
});

import fc from 'fast-check';
import { expect, test } from 'vitest';
import { noteEdits } from '../../../src/kernel/list-edits.js';
import { type Composition, LAST_HEARD_GRAIN_MS, type MachineStatus } from '../../../src/services/status/composition.js';
import { diffList } from '../../../src/services/status/delta/lists.js';
import { countStates } from '../../../src/services/status/looking-back/counts.js';
import { type Coarsening, coarsenLastHeard } from '../../../src/services/status/replicating/stream-publisher.js';
import { aComposition } from '../../fixtures/compositions.js';

// A list made from another by writing a few places is compared at those places alone (noteEdits):
// the delta, the counts and the coarsening must be exactly what a walk of every machine gives.

const MACHINES = 40;
/** What one round does to one machine: kept as it is, heard again (10 s later, a minute later), or another state. */
const edit = fc.record({
  at: fc.integer({ min: 0, max: MACHINES - 1 }),
  how: fc.constantFrom('same', 'same-content', 'heard-10s', 'heard-70s', 'late', 'silent', 'up'),
});
const rounds = fc.array(fc.array(edit, { maxLength: 8 }), { minLength: 1, maxLength: 12 });

function edited(m: MachineStatus, how: string): MachineStatus {
  const later = (ms: number) => new Date(Date.parse(m.lastHeardAt) + ms).toISOString();
  if (how === 'same') return m;
  if (how === 'same-content') return { ...m };
  if (how === 'heard-10s') return { ...m, lastHeardAt: later(10_000) };
  if (how === 'heard-70s') return { ...m, lastHeardAt: later(70_000) };
  return { ...m, state: how.toUpperCase() as MachineStatus['state'] };
}

test('a list noted as written at a few places diffs, counts and coarsens exactly as the walk of every machine does', () => {
  fc.assert(
    fc.property(rounds, (plan) => {
      const base = aComposition(1, MACHINES);
      let composed: MachineStatus[] = base.machines;
      let published: Composition = base;
      let last: Coarsening | undefined;
      countStates(composed);
      for (const [r, edits] of plan.entries()) {
        const next = composed.slice();
        for (const e of edits) next[e.at] = edited(next[e.at]!, e.how);
        noteEdits(
          next,
          composed,
          edits.map((e) => e.at),
        );
        const unnoted = next.slice();
        expect(diffList(composed, next, (m) => m.name)).toEqual(diffList(composed, unnoted, (m) => m.name));
        expect(countStates(next)).toEqual(countStates(unnoted));
        const composition = { ...published, seq: r + 2, machines: next };
        const coarse = coarsenLastHeard(published, composition, LAST_HEARD_GRAIN_MS, last);
        const afresh = coarsenLastHeard(published, { ...composition, machines: unnoted });
        expect(coarse.machines).toEqual(afresh.machines);
        for (let i = 0; i < MACHINES; i++) expect(coarse.machines[i]).toBe(afresh.machines[i]);
        // What the publisher puts: the delta from the list it published before.
        expect(diffList(published.machines, coarse.machines, (m) => m.name)).toEqual(diffList(published.machines, afresh.machines.slice(), (m) => m.name));
        last = { composed: next, published: coarse.machines };
        published = coarse;
        composed = next;
      }
    }),
    { numRuns: 300 },
  );
});

test('edits are not taken for a list they were not noted against, nor past a quarter of its places', () => {
  const a = aComposition(1, 8).machines;
  const b = a.slice();
  b[3] = { ...a[3]!, state: 'LATE' };
  noteEdits(b, a, [3]);
  const other = a.map((m) => ({ ...m }));
  // Against another list, every machine is compared.
  expect(diffList(other, b, (m) => m.name).changed).toEqual([b[3]]);
  const many = a.slice();
  for (let i = 0; i < 3; i++) many[i] = { ...a[i]!, state: 'LATE' };
  many[5] = { ...a[5]!, state: 'SILENT' };
  // Noted with three places of eight while four were written: past a quarter, so not kept, and the walk finds all four.
  noteEdits(many, a, [0, 1, 2]);
  expect(diffList(a, many, (m) => m.name).changed).toHaveLength(4);
});

import { beforeAll, expect, test } from 'vitest';
import type { Composition } from '../../../src/services/status/composition.js';
import { aComposition, oneMachineChanged, randomNext, rng } from '../../fixtures/compositions.js';
import { useGateway } from '../../fixtures/gateway.js';
import { eventually } from '../../fixtures/live.js';

const { gw } = useGateway('status_at');
const SELECTION = `seq composedAt trigger callsRunning handActsThisWeek unheldSeats
  machines { name site state lastHeardAt modules holdings { seat module derived } }
  seats { name held holders { machine module site derived } }
  plans { id seat build state tier tiers behind openedAt endedAt stopReason }
  repeatedCauses { cause count firstAt lastAt }`;

beforeAll(async () => {
  await eventually(() => gw.mesh.status.current(), 'the first composition');
});

test('statusAt(seq:) answers what status answered at that seq, for every composition of a run, across snapshots', async () => {
  const random = rng(14);
  let c: Composition = { ...aComposition(gw.mesh.status.current()!.seq + 1000, 40), controller: gw.mesh.config.controller };
  const said = new Map<number, unknown>();
  for (let i = 0; i < 30; i++) {
    // A snapshot every tenth (as a takeover or the minute's would be), deltas between.
    await gw.mesh.status.publish!(c, i % 10 === 0 ? 'takeover' : 'news');
    const answer = await gw.gql(`{ status { ${SELECTION} } }`);
    expect(answer.errors).toBeUndefined();
    said.set(answer.data.status.seq, answer.data.status);
    c = { ...(i % 3 ? randomNext(c, random) : oneMachineChanged(c, c.seq + 1)), controller: gw.mesh.config.controller };
  }
  for (const [seq, status] of said) {
    const answer = await gw.gql(`query ($seq: Int) { statusAt(seq: $seq) { ${SELECTION} } }`, { seq });
    expect(answer.errors).toBeUndefined();
    expect(answer.data.statusAt).toEqual(status);
  }
  // By instant: the composition in force then.
  const seqs = [...said.keys()];
  const middle = said.get(seqs[15]) as { composedAt: string };
  const stored = gw.mesh.status.history!;
  const atMiddle = await stored.statusAt({ seq: seqs[15] });
  expect(atMiddle.composedAt).toBe(middle.composedAt);
  const byAt = await gw.gql(`query ($at: DateTime) { statusAt(at: $at) { seq } }`, { at: new Date().toISOString() });
  expect(byAt.data.statusAt.seq).toBe(seqs.at(-1));
});

test('statusAt refuses both or neither of seq and at, and says when a seq is not a composition it holds', async () => {
  const both = await gw.gql('{ statusAt(seq: 1, at: "2026-01-01T00:00:00Z") { seq } }');
  expect(both.errors?.[0]).toMatchObject({ message: 'statusAt takes exactly one of seq and at', extensions: { code: 'INVALID' } });
  const neither = await gw.gql('{ statusAt { seq } }');
  expect(neither.errors?.[0].extensions?.code).toBe('INVALID');
  const future = await gw.gql('query ($seq: Int) { statusAt(seq: $seq) { seq } }', { seq: gw.mesh.status.current()!.seq + 50 });
  expect(future.errors?.[0].extensions?.code).toBe('NOT_FOUND');
  const before = await gw.gql('{ statusAt(at: "2020-01-01T00:00:00Z") { seq } }');
  expect(before.errors?.[0].extensions?.code).toBe('NOT_FOUND');
});

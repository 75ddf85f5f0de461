import { beforeAll, expect, test } from 'vitest';
import type { Composition } from '../../../src/services/status/composition.js';
import { applyDelta, diffCompositions } from '../../../src/services/status/delta/delta.js';
import { mergeDeltas, replayDeltas } from '../../../src/services/status/delta/delta-chain.js';
import { aComposition, oneMachineChanged, randomNext, rng } from '../../fixtures/compositions.js';
import { useGateway } from '../../fixtures/gateway.js';
import { eventually, wsSubscribe } from '../../fixtures/live.js';

const { gw } = useGateway('resume');
let c: Composition;

const CHANGES = (args: string) =>
  `subscription { statusChanges${args} { seq baseSeq full { seq machines { name state } } delta { seq baseSeq machines { changed { name state } } } } }`;
type Machine = { name: string; state: string };
type Change = {
  statusChanges: {
    seq: number;
    baseSeq: number | null;
    full: { seq: number; machines: Machine[] } | null;
    delta: { seq: number; baseSeq: number; machines: { changed: Machine[] } } | null;
  };
};

/** Publishes the next composition as the serving replica does: into the status stream, as a delta. */
async function next(): Promise<number> {
  c = oneMachineChanged(c, c.seq + 1);
  await gw.mesh.status.publish!(c, 'news');
  return c.seq;
}

beforeAll(async () => {
  await eventually(() => gw.mesh.status.current(), 'the first composition');
  c = { ...aComposition(gw.mesh.status.current()!.seq + 1000, 20), controller: gw.mesh.config.controller };
  await gw.mesh.status.publish!(c, 'takeover');
});

/** Reads an SSE response's events: each with its `id:` and its data. */
async function sseEvents(query: string, headers: Record<string, string>, count: number): Promise<{ id: string | undefined; data: Change }[]> {
  const abort = new AbortController();
  const response = await fetch(gw.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify({ query }),
    signal: abort.signal,
  });
  const events: { id: string | undefined; data: Change }[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const lines = buffer.slice(0, end).split('\n');
        buffer = buffer.slice(end + 2);
        const data = lines.find((l) => l.startsWith('data: '));
        if (!data || !lines.includes('event: next')) continue;
        const id = lines.find((l) => l.startsWith('id: '))?.slice(4);
        events.push({ id, data: JSON.parse(data.slice(6)).data });
        if (events.length >= count) return events;
      }
    }
  } finally {
    abort.abort();
  }
  return events;
}

test('over graphql-ws, statusChanges(after: N) sends the deltas after N (merged into one), then live ones, and no whole composition', async () => {
  const first = wsSubscribe<Change>(gw.url, CHANGES(''));
  const [whole] = await first.atLeast(1);
  expect(whole.statusChanges.full?.seq).toBe(c.seq);
  first.close();
  const held = whole.statusChanges.seq;
  // Away while three compositions are made.
  const missed = [await next(), await next(), await next()];

  const resumed = wsSubscribe<Change>(gw.url, CHANGES(`(after: ${held})`));
  await resumed.atLeast(1);
  const live = await next();
  const got = (await resumed.atLeast(2)).map((m) => m.statusChanges);
  resumed.close();
  expect(got.map((m) => m.full)).toEqual([null, null]);
  expect(got.map((m) => [m.baseSeq, m.seq])).toEqual([
    [held, missed[2]],
    [missed[2], live],
  ]);
  // What the subscriber holds after applying them is the composition served now.
  const states = new Map(whole.statusChanges.full!.machines.map((m) => [m.name, m.state]));
  for (const m of got) for (const x of m.delta!.machines.changed) states.set(x.name, x.state);
  expect(states).toEqual(new Map(gw.mesh.status.current()!.machines.map((m) => [m.name, m.state])));
});

test('the deltas of any run merged into one rebuild its last composition from its first', () => {
  const random = rng(7);
  for (let run = 0; run < 50; run++) {
    let prev = aComposition(1, 30);
    const first = prev;
    const chain = [];
    for (let i = 0; i < 1 + (run % 8); i++) {
      const nextOne = randomNext(prev, random);
      chain.push(diffCompositions(prev, nextOne));
      prev = nextOne;
    }
    expect(applyDelta(first, mergeDeltas(chain, prev))).toEqual(prev);
  }
});

test('after: a seq this replica no longer keeps (or never had) sends a whole composition first', async () => {
  const sub = wsSubscribe<Change>(gw.url, CHANGES('(after: 3)'));
  const [m] = await sub.atLeast(1);
  sub.close();
  expect(m.statusChanges.full?.seq).toBe(c.seq);
  expect(m.statusChanges.baseSeq).toBeNull();
});

test('over SSE, every event carries the seq as id:, and Last-Event-ID resumes with the deltas after it (merged)', async () => {
  const [whole] = await sseEvents(CHANGES(''), {}, 1);
  expect(whole.id).toBe(String(c.seq));
  expect(whole.data.statusChanges.full?.seq).toBe(c.seq);
  const missed = [await next(), await next()];

  const resumed = await sseEvents(CHANGES(''), { 'last-event-id': whole.id! }, 1);
  expect(resumed.map((e) => e.id)).toEqual([String(missed[1])]);
  expect(resumed.map((e) => [e.data.statusChanges.baseSeq, e.data.statusChanges.seq])).toEqual([[Number(whole.id), missed[1]]]);
  expect(resumed[0].data.statusChanges.full).toBeNull();

  // after: works over SSE too; the status subscription's events carry ids as well.
  const viaAfter = await sseEvents(CHANGES(`(after: ${missed[0]})`), {}, 1);
  expect(viaAfter[0].data.statusChanges.delta).toMatchObject({ baseSeq: missed[0], seq: missed[1] });
  const [status] = await sseEvents('subscription { status { seq } }', {}, 1);
  expect(status.id).toBe(String(c.seq));
});

test('a chain of deltas replayed at once gives what applying them one by one gives', () => {
  const random = rng(21);
  let prev = aComposition(1, 40);
  const first = prev;
  const chain = [];
  let stepwise = first;
  for (let i = 0; i < 60; i++) {
    const nextOne = i % 2 ? randomNext(prev, random) : oneMachineChanged(prev, prev.seq + 1);
    const delta = JSON.parse(JSON.stringify(diffCompositions(prev, nextOne)));
    chain.push(delta);
    stepwise = applyDelta(stepwise, delta);
    prev = nextOne;
  }
  expect(replayDeltas(first, chain)).toEqual(stepwise);
  expect(replayDeltas(first, chain)).toEqual(prev);
});

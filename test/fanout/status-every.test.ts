import { beforeAll, expect, test } from 'vitest';
import type { Composition } from '../../src/services/status/composition.js';
import { aComposition, oneMachineChanged } from '../fixtures/compositions.js';
import { useGateway } from '../fixtures/gateway.js';
import { eventually, sseSubscribe, wsSubscribe } from '../fixtures/live.js';

const { gw } = useGateway('every');
let c: Composition;

type Machine = { name: string; state: string };
type Change = {
  statusChanges: { seq: number; baseSeq: number | null; full: { seq: number; machines: Machine[] } | null; delta: { machines: { changed: Machine[] } } | null };
};
const CHANGES = (every: number) =>
  `subscription { statusChanges(everyMs: ${every}) { seq baseSeq full { seq machines { name state } } delta { machines { changed { name state } } } } }`;

beforeAll(async () => {
  await eventually(() => gw.mesh.status.current(), 'the first composition');
  c = { ...aComposition(gw.mesh.status.current()!.seq + 1000, 30), controller: gw.mesh.config.controller };
  await gw.mesh.status.publish!(c, 'takeover');
});

/** What a client holds after applying every message: machine name → state. */
function held(messages: Change[]): Map<string, string> {
  const states = new Map<string, string>();
  for (const { statusChanges: m } of messages) {
    if (m.full) {
      states.clear();
      for (const x of m.full.machines) states.set(x.name, x.state);
    }
    for (const x of m.delta?.machines.changed ?? []) states.set(x.name, x.state);
  }
  return states;
}

test('everyMs sends at most one message per interval, the latest, with the changes of those skipped merged (none lost)', async () => {
  const EVERY = 400;
  const ws = wsSubscribe<Change>(gw.url, CHANGES(EVERY));
  const sse = sseSubscribe<Change>(gw.url, CHANGES(EVERY));
  const whole = wsSubscribe<{ status: { seq: number } }>(gw.url, `subscription { status(everyMs: ${EVERY}) { seq } }`);
  await Promise.all([ws.atLeast(1), sse.atLeast(1), whole.atLeast(1)]);
  const started = Date.now();
  // Twelve compositions in a burst, each changing another machine.
  for (let i = 0; i < 12; i++) {
    c = oneMachineChanged(c, c.seq + 1, i);
    await gw.mesh.status.publish!(c, 'news');
    await new Promise((r) => setTimeout(r, 20));
  }
  const last = c.seq;
  for (const sub of [ws, sse]) await eventually(() => sub.items.at(-1)?.statusChanges.seq === last, 'the last composition to arrive');
  await eventually(() => whole.items.at(-1)?.status.seq === last, 'the last whole composition to arrive');
  const elapsed = Date.now() - started;
  const intervals = Math.ceil(elapsed / EVERY) + 1;
  const truth = new Map(gw.mesh.status.current()!.machines.map((m) => [m.name, m.state]));
  for (const sub of [ws, sse]) {
    const messages = sub.items;
    // The first whole one, then at most one per interval; far fewer than the twelve compositions.
    expect(messages.length - 1).toBeLessThanOrEqual(intervals);
    expect(messages.length - 1).toBeLessThan(12);
    expect(messages.length, 'the first whole one and at least the last composition').toBeGreaterThanOrEqual(2);
    expect(messages.slice(1).every((m) => m.statusChanges.delta !== null)).toBe(true);
    expect(held(messages)).toEqual(truth);
  }
  expect(whole.items.length - 1).toBeLessThanOrEqual(intervals);
  for (const sub of [ws, sse, whole]) sub.close();
});

test('an everyMs out of range is refused with a clear error, over SSE and graphql-ws', async () => {
  const sse = sseSubscribe(gw.url, 'subscription { status(everyMs: -5) { seq } }');
  await expect(sse.atLeast(1, 10_000)).rejects.toThrow(/everyMs must be between 0 and 3600000/);
  sse.close();
  const ws = wsSubscribe(gw.url, 'subscription { statusChanges(everyMs: 99999999) { seq } }');
  await expect(ws.atLeast(1, 10_000)).rejects.toThrow(/everyMs must be between 0 and 3600000/);
  ws.close();
});

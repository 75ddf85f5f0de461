import { GraphQLError } from 'graphql';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { LIVE_WAITING_MAX, LiveQueue, type LiveStep } from '../../src/kernel/live-queue.js';
import type { GatewayContext } from '../../src/schema/support/context.js';
import { followed, followedItem } from '../../src/schema/support/live-follow.js';
import { useGateway } from '../fixtures/gateway.js';
import { anAgent, eventually, type Received, sseSubscribe, wsSubscribe } from '../fixtures/live.js';
import { aMachine } from '../fixtures/mesh.js';
import { startTestGateway, type TestGateway } from '../fixtures/services.js';

// Two replicas over one store and one NATS: what one records, the other's subscribers hear.
const { gw: a, env } = useGateway('live_subs');
let b: TestGateway;
let agent: Awaited<ReturnType<typeof anAgent>>;
const open: Received<unknown>[] = [];

beforeAll(async () => {
  b = await startTestGateway(env.env);
  agent = await anAgent();
  const claims = { broker: ['queue'] };
  await aMachine(a.mesh.db, { name: 'lv-a', site: 'eu-1', claims });
  await aMachine(a.mesh.db, { name: 'lv-b', site: 'eu-2', claims });
});
afterAll(async () => {
  for (const r of open) r.close();
  await b?.stop();
  await agent?.close();
});

function watch<T = any>(how: 'ws' | 'sse', gw: TestGateway, query: string): Received<T> {
  const r = (how === 'ws' ? wsSubscribe : sseSubscribe)<T>(gw.url, query);
  open.push(r as Received<unknown>);
  return r;
}

async function recordAct(gw: TestGateway, act: string, cause = 'test'): Promise<{ id: string }> {
  const r = await gw.gql(
    `mutation($act: String!, $cause: String) { recordHandAct(act: $act, why: "a repair by hand", cause: $cause) { ... on MutationRecordHandActSuccess { data { id } } } }`,
    { act, cause },
  );
  if (r.errors) throw new Error(JSON.stringify(r.errors));
  return r.data.recordHandAct.data;
}

/** Waits until a subscription is heard by its replica: an act recorded until one arrives. */
async function primed<T>(received: Received<T>, gw: TestGateway, act: string): Promise<number> {
  await eventually(
    async () => {
      if (received.items.length > 0) return true;
      await recordAct(gw, act);
      return undefined;
    },
    'the subscription to hear its first act',
    20_000,
    500,
  );
  return received.items.length;
}

for (const how of ['ws', 'sse'] as const) {
  test(`handActAdded over ${how}: an act recorded on one replica reaches a subscriber of the other, and a resume by cursor sends what came after, oldest first`, async () => {
    const live = watch(how, b, `subscription { handActAdded { id act actor why } }`);
    const primedWith = await primed(live, a, `prime-${how}`);
    const first = await recordAct(a, `first-${how}`);
    const second = await recordAct(a, `second-${how}`);
    const third = await recordAct(a, `third-${how}`);
    const got = await live.atLeast(primedWith + 3, 20_000);
    const tail = got.map((x: any) => x.handActAdded.id);
    expect(tail).toEqual(expect.arrayContaining([first.id, second.id, third.id]));
    expect(got.at(-1)).toMatchObject({ handActAdded: { id: third.id, act: `third-${how}`, why: 'a repair by hand' } });

    // A subscriber that had `first` comes back with it as its cursor: the two after it, then live.
    const resumed = watch(how, b, `subscription { handActAdded(after: "${first.id}") { id act } }`);
    const backlog = await resumed.atLeast(2, 20_000);
    expect(backlog.slice(0, 2).map((x: any) => x.handActAdded.id)).toEqual([second.id, third.id]);
    const fourth = await recordAct(a, `fourth-${how}`);
    await eventually(() => resumed.items.some((x: any) => x.handActAdded.id === fourth.id), 'the live act after the resumed ones', 20_000);
    expect(resumed.items.map((x: any) => x.handActAdded.id)).toEqual([second.id, third.id, fourth.id]);
  });

  test(`callChanged over ${how}: a call run on one replica is heard starting and ending on the other, of the seat asked, and resumes by its cursor`, async () => {
    const seat = a.config.controller;
    const live = watch(how, b, `subscription { callChanged(seat: "${seat}") { id verb state cursor } }`);
    const primedWith = await primed(live, a, `call-prime-${how}`);
    const done = await recordAct(a, `call-${how}`);
    // An act answers after 1.5 s when putting its records takes longer (docs/calls.md): its hand-act may come a moment later.
    const callId = await eventually(async () => {
      const { data } = await a.gql(`{ handActs(first: 5) { edges { node { id callId } } } }`);
      return data.handActs.edges.find((e: any) => e.node.id === done.id)?.node.callId as string | undefined;
    }, 'the act’s hand-act in the log');
    expect(callId).toMatch(/^[0-9a-z]{19}$/);
    await eventually(() => live.items.some((x: any) => x.callChanged.id === callId && x.callChanged.state === 'OK'), 'the call OK', 20_000);
    const ofCall = live.items.slice(primedWith).filter((x: any) => x.callChanged.id === callId);
    expect(ofCall.map((x: any) => x.callChanged.state)).toEqual(['RUNNING', 'OK']);
    expect(ofCall[0].callChanged.cursor).toMatch(/^\d+$/);
    expect(Number(ofCall[1].callChanged.cursor)).toBeGreaterThan(Number(ofCall[0].callChanged.cursor));

    // Resumed from the RUNNING change: the call as it is now (OK), once.
    const resumed = watch(how, b, `subscription { callChanged(seat: "${seat}", after: "${ofCall[0].callChanged.cursor}") { id state cursor } }`);
    const [again] = await resumed.atLeast(1, 20_000);
    expect(again).toMatchObject({ callChanged: { id: callId, state: 'OK', cursor: ofCall[1].callChanged.cursor } });

    // A state narrows it: only ends.
    const ends = watch(how, a, `subscription { callChanged(state: OK) { id state } }`);
    await primed(ends, b, `call-ends-${how}`);
    expect(ends.items.every((x: any) => x.callChanged.state === 'OK')).toBe(true);
  });

  test(`planChanged over ${how}: a plan pushed on one replica is followed on the other through its applies and to DONE`, async () => {
    const all = watch(how, b, `subscription { planChanged { id state tier } }`);
    const pushed = await a.gql(`mutation { push(seat: "queue", build: "live-${how}", why: "follow it") { ... on MutationPushSuccess { data { id } } } }`);
    const id = pushed.data.push.data.id as string;
    await eventually(() => all.items.some((x: any) => x.planChanged.id === id), 'the pushed plan heard on the other replica', 20_000);

    const one = watch(how, b, `subscription { planChanged(id: "${id}") { id state tier applies { machine ok } } }`);
    const [now] = await one.atLeast(1, 20_000);
    expect(now).toMatchObject({ planChanged: { id, state: 'OPEN', tier: 0 } });
    agent.report(env.subjects, 'lv-a', { plan: id, build: `live-${how}`, ok: true });
    await eventually(() => one.items.some((x: any) => x.planChanged.tier === 1), 'the second tier', 20_000);
    const afterFirst = one.items.find((x: any) => x.planChanged.tier === 1) as any;
    expect(afterFirst.planChanged.applies).toEqual(expect.arrayContaining([{ machine: 'lv-a', ok: true }]));
    agent.report(env.subjects, 'lv-b', { plan: id, build: `live-${how}`, ok: true });
    await eventually(() => one.items.some((x: any) => x.planChanged.state === 'DONE'), 'the plan DONE', 20_000);
    const last = one.items.at(-1) as any;
    expect(last.planChanged).toMatchObject({ state: 'DONE' });
    expect(last.planChanged.applies).toEqual(expect.arrayContaining([{ machine: 'lv-b', ok: true }]));
  });
}

test('the SSE events of handActAdded carry the hand-act id, and Last-Event-ID resumes after it', async () => {
  const first = await recordAct(a, 'sse-id-1');
  const second = await recordAct(a, 'sse-id-2');
  const abort = new AbortController();
  const response = await fetch(b.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'last-event-id': first.id },
    body: JSON.stringify({ query: 'subscription { handActAdded { id } }' }),
    signal: abort.signal,
  });
  const decoder = new TextDecoder();
  let text = '';
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      if (text.includes(`"${second.id}"`)) break;
    }
  } finally {
    abort.abort();
  }
  expect(text).toContain(`id: ${second.id}\n`);
  expect(text).not.toContain(`"${first.id}"`);
});

test('an unknown plan is NOT_FOUND and a malformed cursor INVALID, as the subscription’s error', async () => {
  const plan = watch('ws', b, `subscription { planChanged(id: "plan-nothere") { id } }`);
  await expect(plan.atLeast(1)).rejects.toThrow(/NOT_FOUND/);
  const cursor = watch('sse', b, `subscription { handActAdded(after: "not a cursor") { id } }`);
  await expect(cursor.atLeast(1)).rejects.toThrow(/INVALID/);
});

test('a follower that lets the most allowed wait is dropped, told so once, and holds nothing more', async () => {
  let ended = 0;
  const queue = new LiveQueue<number>([1, 2][Symbol.iterator](), () => ended++);
  for (let i = 0; i <= LIVE_WAITING_MAX; i++) queue.push(i);
  expect(queue.size).toBe(0);
  expect(ended).toBe(1);
  const steps: LiveStep<number>[] = [];
  for await (const step of queue) steps.push(step);
  // Dropped: what was kept since its cursor is for its resume, not sent now.
  expect(steps).toEqual([{ kind: 'dropped' }]);
  queue.push(5);
  expect(queue.size).toBe(0);
});

test('a dropped subscriber is sent SLOW_SUBSCRIBER naming the cursor of the last item it was sent, then completes', async () => {
  const queue = new LiveQueue<{ id: string }>(undefined, () => undefined);
  const source = followed(queue, {} as GatewayContext, (item) => item.id, 'from-here');
  queue.push({ id: 'a1' });
  const first = await source.next();
  expect(followedItem(first.value!)).toEqual({ id: 'a1' });
  for (let i = 0; i <= LIVE_WAITING_MAX; i++) queue.push({ id: `x${i}` });
  const dropped = await source.next();
  let error: unknown;
  try {
    followedItem(dropped.value!);
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(GraphQLError);
  expect((error as GraphQLError).extensions).toEqual({ code: 'SLOW_SUBSCRIBER', resumeAfter: 'a1' });
  expect((error as GraphQLError).message).toContain('subscribe again with after: "a1"');
  expect(await source.next()).toEqual({ value: undefined, done: true });
});

import { beforeEach, expect, test } from 'vitest';
import { recordHeartbeats } from '../../../src/services/machines/machines.js';
import { useGateway } from '../../fixtures/gateway.js';
import { eventually, wsSubscribe } from '../../fixtures/live.js';
import { HOLD_SEAT } from '../../fixtures/operations.js';
import { aSeatClaimedBy, useMachinesAgent } from '../../fixtures/plans.js';

// Plans an operator can follow and finish: push refuses strangers, a plan says why it stopped
// and what each machine answered, a stopped plan resumes, a queued plan opens when the one ahead is DONE.

const { gw, env } = useGateway('plans_operator');
const { applies, appliesOf, report, everyApplyHeard } = useMachinesAgent(gw, env);

let n = 0;
let seat: string;
let m: { a1: string; a2: string; b1: string; other: string };
beforeEach(async () => {
  n++;
  seat = `svc-${n}`;
  m = { a1: `oa1-${n}`, a2: `oa2-${n}`, b1: `ob1-${n}`, other: `oother-${n}` };
  // a1, a2 in site a and b1 in site b run a module claiming the seat; `other` runs one that does not.
  await aSeatClaimedBy(gw, seat, 'svc', [
    { machine: m.a1, site: 'site-a' },
    { machine: m.a2, site: 'site-a' },
    { machine: m.b1, site: 'site-b' },
  ]);
  await recordHeartbeats(gw.mesh.db, [{ machine: m.other, site: 'site-b', modules: ['elsewhere'], claims: { elsewhere: [] }, at: new Date() }]);
});

const PLAN = 'id state tier tiers stopReason endedAt applies { tier machine sentAt reportedAt ok detail }';
const ERROR = '... on Error { __typename code message }';

async function mutate(field: string, args: string) {
  const r = await gw.gql(
    `mutation { ${field}(${args}) { __typename ... on Mutation${field[0]!.toUpperCase()}${field.slice(1)}Success { data { ${PLAN} } } ${ERROR} } }`,
  );
  if (r.errors) throw new Error(JSON.stringify(r.errors));
  const result = r.data[field];
  return result.data ?? result;
}

async function planById(id: string) {
  const r = await gw.gql(`{ plans(first: 1000) { ${PLAN} } }`);
  if (r.errors) throw new Error(JSON.stringify(r.errors));
  return r.data.plans.find((p: { id: string }) => p.id === id);
}

async function statusPlan(id: string) {
  const r = await gw.gql(`{ status { seq plans { id state stopReason } } }`);
  if (r.errors) throw new Error(JSON.stringify(r.errors));
  return r.data.status.plans.find((p: { id: string }) => p.id === id);
}

const tiersArg = (tiers: string[][]) => JSON.stringify(tiers);

test('push refuses tiers naming a machine that does not hold the seat, naming it, and sends no apply', async () => {
  const plansBefore = (await gw.gql(`{ plans(first: 1000) { id } }`)).data.plans.length;
  const refused = await mutate('push', `seat: "${seat}", build: "x-1", tiers: ${tiersArg([[m.a1], [m.other]])}, why: "a stranger in tier 1"`);
  expect(refused).toEqual({
    __typename: 'ConflictError',
    code: 'CONFLICT',
    message: `machine "${m.other}" does not hold seat "${seat}": a plan applies only to its holders`,
  });
  expect((await gw.gql(`{ plans(first: 1000) { id } }`)).data.plans.length).toBe(plansBefore);

  // Recorded holdings replace derived ones: once a1 holds the seat on record, a2 no longer does.
  const held = await gw.gql(HOLD_SEAT, { seat, machine: m.a1, module: 'svc' });
  expect(held.data.holdSeat.__typename).toBe('MutationHoldSeatSuccess');
  expect(await mutate('push', `seat: "${seat}", build: "x-2", tiers: ${tiersArg([[m.a1, m.a2]])}, why: "a2 is no holder now"`)).toMatchObject({
    __typename: 'ConflictError',
    message: `machine "${m.a2}" does not hold seat "${seat}": a plan applies only to its holders`,
  });
  const plan = await mutate('push', `seat: "${seat}", build: "x-3", tiers: ${tiersArg([[m.a1]])}, why: "the recorded holder"`);
  expect(plan).toMatchObject({ state: 'OPEN', tiers: [[m.a1]] });
  await eventually(() => appliesOf(plan.id)[0], 'the holder applied');
  expect(applies.filter((a) => a.build === 'x-1' || a.build === 'x-2')).toEqual([]);
});

test('a plan stopped by a failed report says which machine and why, lists every apply, and stays in status until closed', async () => {
  const plan = await mutate('push', `seat: "${seat}", build: "y-1", why: "release y-1"`);
  await eventually(() => appliesOf(plan.id)[0], 'tier 0 applied');
  report(m.a1, plan.id, 'y-1', true, 'applied');
  report(m.a2, plan.id, 'y-1', false, 'disk full');
  const stopped = await eventually(async () => {
    const p = await planById(plan.id);
    return p.state === 'STOPPED' && p;
  }, 'the plan STOPPED');
  expect(stopped.stopReason).toBe(`machine ${m.a2} reported a failed apply: disk full`);
  expect(stopped.applies).toEqual([
    { tier: 0, machine: m.a1, sentAt: expect.any(String), reportedAt: expect.any(String), ok: true, detail: 'applied' },
    { tier: 0, machine: m.a2, sentAt: expect.any(String), reportedAt: expect.any(String), ok: false, detail: 'disk full' },
  ]);
  expect(appliesOf(plan.id)).toHaveLength(1);

  const inStatus = await eventually(async () => {
    const p = await statusPlan(plan.id);
    return p?.state === 'STOPPED' && p;
  }, 'the STOPPED plan in status');
  expect(inStatus).toEqual({ id: plan.id, state: 'STOPPED', stopReason: `machine ${m.a2} reported a failed apply: disk full` });

  expect(await mutate('closePlan', `id: "${plan.id}", why: "y-1 abandoned"`)).toMatchObject({ state: 'CLOSED' });
  await eventually(async () => (await statusPlan(plan.id)) === undefined, 'the closed plan gone from status');
});

test("a plan stopped by hand keeps stopPlan's why as its stopReason", async () => {
  const plan = await mutate('push', `seat: "${seat}", build: "y-2", why: "release y-2"`);
  expect(plan.stopReason).toBeNull();
  expect(plan.applies).toEqual([
    { tier: 0, machine: m.a1, sentAt: expect.any(String), reportedAt: null, ok: null, detail: null },
    { tier: 0, machine: m.a2, sentAt: expect.any(String), reportedAt: null, ok: null, detail: null },
  ]);
  const stopped = await mutate('stopPlan', `id: "${plan.id}", why: "the canary looks slow"`);
  expect(stopped).toMatchObject({ state: 'STOPPED', stopReason: 'the canary looks slow' });
  expect((await planById(plan.id)).stopReason).toBe('the canary looks slow');
});

test('applies of many plans are read with one SQL statement', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await mutate('push', `seat: "${seat}", build: "z-${i}", tiers: ${tiersArg([[m.b1]])}, why: "plan ${i}"`)).id);
  // The gateway's own work (the apply time-outs, the resends) reads plan_apply too, at any moment: the try that ran the fewest statements is the request's own.
  const { result: r, sql } = await gw.statementsOf(() => gw.gql(`{ plans(first: 1000) { id applies { machine tier } } }`));
  expect(r.errors).toBeUndefined();
  for (const id of ids) expect(r.data.plans.find((p: { id: string }) => p.id === id).applies).toEqual([{ machine: m.b1, tier: 0 }]);
  expect(r.data.plans.length).toBeGreaterThan(3);
  expect(sql.filter((q) => q.includes('"plan_apply"'))).toHaveLength(1);
});

test('statusChanges carries a plan whose stopReason changed as a changed plan', async () => {
  const plan = await mutate('push', `seat: "${seat}", build: "w-1", tiers: ${tiersArg([[m.a1]])}, why: "release w-1"`);
  await eventually(async () => (await statusPlan(plan.id))?.state === 'OPEN', 'the plan in status');
  const changes = wsSubscribe(
    gw.url,
    `subscription { statusChanges { seq full { plans { id state stopReason } } delta { plans { changed { id state stopReason } added { id } } } } }`,
  );
  try {
    await changes.atLeast(1);
    report(m.a1, plan.id, 'w-1', false, 'bad config');
    const reason = `machine ${m.a1} reported a failed apply: bad config`;
    const delta = await eventually(
      () => changes.items.find((c) => c.statusChanges.delta?.plans.changed.some((p: { id: string }) => p.id === plan.id))?.statusChanges.delta,
      'a delta changing the plan',
    );
    expect(delta.plans.changed.find((p: { id: string }) => p.id === plan.id)).toEqual({ id: plan.id, state: 'STOPPED', stopReason: reason });
  } finally {
    changes.close();
  }
});

test('resumePlan sends the stopped tier’s failed machines the apply again, opens the plan, and the rollout goes on to DONE', async () => {
  const plan = await mutate('push', `seat: "${seat}", build: "r-1", why: "release r-1"`);
  await eventually(() => appliesOf(plan.id)[0], 'tier 0 applied');
  report(m.a1, plan.id, 'r-1', false, 'port in use');
  report(m.a2, plan.id, 'r-1', true);
  await eventually(async () => {
    const p = await planById(plan.id);
    return p.state === 'STOPPED' && p.applies.every((a: { ok: boolean | null }) => a.ok !== null);
  }, 'the plan STOPPED with both reports');
  const before = (await planById(plan.id)).applies.find((a: { machine: string }) => a.machine === m.a1);

  const resumed = await mutate('resumePlan', `id: "${plan.id}", why: "port freed on a1", cause: "port-in-use"`);
  expect(resumed).toMatchObject({ id: plan.id, state: 'OPEN', tier: 0, stopReason: null, endedAt: null });
  const a1 = resumed.applies.find((a: { machine: string }) => a.machine === m.a1);
  expect(a1).toEqual({ tier: 0, machine: m.a1, sentAt: expect.any(String), reportedAt: null, ok: null, detail: null });
  expect(Date.parse(a1.sentAt)).toBeGreaterThanOrEqual(Date.parse(before.sentAt));
  expect(resumed.applies.find((a: { machine: string }) => a.machine === m.a2)).toMatchObject({ ok: true });
  const retry = await eventually(() => appliesOf(plan.id)[1], 'the retry applied');
  expect(retry).toEqual({ plan: plan.id, tier: 0, build: 'r-1', machines: [m.a1] });

  report(m.a1, plan.id, 'r-1', true);
  const next = await eventually(() => appliesOf(plan.id)[2], 'tier 1 applied');
  expect(next).toEqual({ plan: plan.id, tier: 1, build: 'r-1', machines: [m.b1] });
  report(m.b1, plan.id, 'r-1', true);
  await eventually(async () => (await planById(plan.id)).state === 'DONE', 'the plan DONE');

  const acts = (await gw.gql(`{ handActs(first: 1) { edges { node { act target why cause } } } }`)).data.handActs.edges.map((e: any) => e.node);
  expect(acts).toEqual([{ act: 'resumePlan', target: plan.id, why: 'port freed on a1', cause: 'port-in-use' }]);
});

test('resumePlan refuses a plan that is not STOPPED', async () => {
  const plan = await mutate('push', `seat: "${seat}", build: "r-2", why: "release r-2"`);
  expect(await mutate('resumePlan', `id: "${plan.id}", why: "not stopped"`)).toEqual({
    __typename: 'ConflictError',
    code: 'CONFLICT',
    message: `plan ${plan.id} is OPEN: only a STOPPED plan can be resumed`,
  });
  expect(await mutate('resumePlan', `id: "plan-none", why: "no such plan"`)).toMatchObject({ __typename: 'NotFoundError' });
  await everyApplyHeard();
  expect(appliesOf(plan.id)).toHaveLength(1);
});

test('a plan queued behind another opens and rolls out when that one ends DONE, and one pushed behind a DONE plan opens at once', async () => {
  const ahead = await mutate('push', `seat: "${seat}", build: "q-1", tiers: ${tiersArg([[m.a1]])}, why: "release q-1"`);
  await eventually(() => appliesOf(ahead.id)[0], 'the plan ahead applied');
  const pushed = await gw.gql(
    `mutation { push(seat: "${seat}", build: "q-2", behind: "${ahead.id}", tiers: ${tiersArg([[m.b1]])}, why: "after q-1") { ... on MutationPushSuccess { data { id state openedAt } } } }`,
  );
  const behind = pushed.data.push.data;
  expect(behind).toMatchObject({ state: 'QUEUED', openedAt: null });
  await everyApplyHeard();
  expect(appliesOf(behind.id)).toEqual([]);

  report(m.a1, ahead.id, 'q-1', true);
  const first = await eventually(() => appliesOf(behind.id)[0], 'the queued plan applied');
  expect(first).toEqual({ plan: behind.id, tier: 0, build: 'q-2', machines: [m.b1] });
  const { data } = await gw.gql(`{ plans(first: 1000) { id state openedAt } }`);
  expect(data.plans.find((p: { id: string }) => p.id === ahead.id)).toMatchObject({ state: 'DONE' });
  expect(data.plans.find((p: { id: string }) => p.id === behind.id)).toMatchObject({ state: 'OPEN', openedAt: expect.any(String) });

  const afterDone = await mutate('push', `seat: "${seat}", build: "q-3", behind: "${ahead.id}", tiers: ${tiersArg([[m.a2]])}, why: "behind a DONE plan"`);
  expect(afterDone).toMatchObject({ state: 'OPEN' });
  await eventually(() => appliesOf(afterDone.id)[0], 'the plan behind a DONE plan applied');
});

import { beforeEach, expect, test } from 'vitest';
import { closePlan, push } from '../../../src/services/plans/plans.js';
import { useGateway } from '../../fixtures/gateway.js';
import { eventually } from '../../fixtures/live.js';
import { aSeatClaimedBy, useMachinesAgent } from '../../fixtures/plans.js';

const { gw, env } = useGateway('rollout');
const { appliesOf, report, everyApplyHeard } = useMachinesAgent(gw, env);

let n = 0;
let seat: string;
let machines: { a1: string; a2: string; b1: string };
beforeEach(async () => {
  n++;
  seat = `web-${n}`;
  machines = { a1: `a1-${n}`, a2: `a2-${n}`, b1: `b1-${n}` };
  // Two machines in site a, one in site b, each running a module that claims the seat.
  await aSeatClaimedBy(gw, seat, 'web', [
    { machine: machines.a1, site: 'site-a' },
    { machine: machines.a2, site: 'site-a' },
    { machine: machines.b1, site: 'site-b' },
  ]);
});

const planRow = (id: string) => gw.mesh.db.selectFrom('plan').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const durations = (kind: 'apply' | 'plan_tier', plan: string) =>
  gw.mesh.db.selectFrom('duration').select(['subject', 'seconds']).where('kind', '=', kind).where('subject', 'like', `${plan}/%`).orderBy('subject').execute();

/** Waits until the gateway has written `count` news since `ingestedBefore`, then until every apply it published since is heard. */
async function everyApplyHeardAfter(ingestedBefore: number, count: number): Promise<void> {
  await eventually(() => gw.news.stats.ingested >= ingestedBefore + count, `${count} reports written`);
  await everyApplyHeard();
}

test('a plan rolls out tier by tier: each tier applied once the one before reported ok, then DONE, with apply and tier durations', async () => {
  const started = Date.now();
  const plan = await push(gw.mesh, { seat, build: 'build-7' });
  const first = await eventually(() => appliesOf(plan.id)[0], 'the first tier applied');
  expect(first).toEqual({ plan: plan.id, tier: 0, build: 'build-7', machines: [machines.a1, machines.a2] });

  report(machines.a1, plan.id, 'build-7', true);
  await eventually(async () => (await durations('apply', plan.id)).length === 1, "a1's apply duration");
  expect(appliesOf(plan.id)).toHaveLength(1);
  report(machines.a2, plan.id, 'build-7', true);
  const second = await eventually(() => appliesOf(plan.id)[1], 'the second tier applied');
  expect(second).toEqual({ plan: plan.id, tier: 1, build: 'build-7', machines: [machines.b1] });
  expect((await planRow(plan.id)).state).toBe('OPEN');

  report(machines.b1, plan.id, 'build-7', true, 'applied in 3 s');
  await eventually(async () => (await planRow(plan.id)).state === 'DONE', 'the plan DONE');
  const done = await planRow(plan.id);
  expect(done.tier).toBe(1);
  expect(done.ended_at).not.toBeNull();
  expect((await durations('apply', plan.id)).map((d) => d.subject)).toEqual([
    `${plan.id}/${machines.a1}`,
    `${plan.id}/${machines.a2}`,
    `${plan.id}/${machines.b1}`,
  ]);
  expect((await durations('plan_tier', plan.id)).map((d) => d.subject)).toEqual([`${plan.id}/0`, `${plan.id}/1`]);
  // Each is measured in seconds between the apply sent and its report: never negative, never more than the test took.
  const tookSeconds = (Date.now() - started) / 1000;
  for (const d of [...(await durations('apply', plan.id)), ...(await durations('plan_tier', plan.id))]) {
    expect(d.seconds).toBeGreaterThanOrEqual(0);
    expect(d.seconds).toBeLessThanOrEqual(tookSeconds);
  }
  const rows = await gw.mesh.db.selectFrom('plan_apply').select(['machine', 'tier', 'ok', 'detail']).where('plan', '=', plan.id).orderBy('machine').execute();
  expect(rows).toEqual([
    { machine: machines.a1, tier: 0, ok: true, detail: null },
    { machine: machines.a2, tier: 0, ok: true, detail: null },
    { machine: machines.b1, tier: 1, ok: true, detail: 'applied in 3 s' },
  ]);
});

test('a failed report stops the plan: the next tier is never applied', async () => {
  const plan = await push(gw.mesh, { seat, build: 'build-8' });
  await eventually(() => appliesOf(plan.id)[0], 'the first tier applied');
  report(machines.a1, plan.id, 'build-8', false, 'disk full');
  await eventually(async () => (await planRow(plan.id)).state === 'STOPPED', 'the plan STOPPED');
  const ingested = gw.news.stats.ingested;
  report(machines.a2, plan.id, 'build-8', true);
  await everyApplyHeardAfter(ingested, 1);
  expect(await durations('apply', plan.id), "a2's apply duration, still recorded").toHaveLength(2);
  expect(appliesOf(plan.id)).toHaveLength(1);
  expect((await planRow(plan.id)).state).toBe('STOPPED');
  expect(await durations('plan_tier', plan.id)).toEqual([]);
  const failed = await gw.mesh.db
    .selectFrom('plan_apply')
    .select(['ok', 'detail'])
    .where('plan', '=', plan.id)
    .where('machine', '=', machines.a1)
    .executeTakeFirstOrThrow();
  expect(failed).toEqual({ ok: false, detail: 'disk full' });
});

test('a second report, a report of another build or of a machine the plan did not send to changes nothing', async () => {
  const plan = await push(gw.mesh, { seat, build: 'build-9' });
  await eventually(() => appliesOf(plan.id)[0], 'the first tier applied');
  report(machines.a1, plan.id, 'build-9', true);
  await eventually(async () => (await durations('apply', plan.id)).length === 1, "a1's report");
  const ingested = gw.news.stats.ingested;
  report(machines.a1, plan.id, 'build-9', false, 'a second report');
  report(machines.a2, plan.id, 'build-OLD', false, 'another build');
  report(machines.b1, plan.id, 'build-9', false, 'not sent yet');
  report(machines.a2, 'plan-nope', 'build-9', false);
  await everyApplyHeardAfter(ingested, 4);
  expect((await planRow(plan.id)).state).toBe('OPEN');
  expect(await durations('apply', plan.id)).toHaveLength(1);
  expect(appliesOf(plan.id)).toHaveLength(1);
  const a1 = await gw.mesh.db.selectFrom('plan_apply').select('ok').where('plan', '=', plan.id).where('machine', '=', machines.a1).executeTakeFirstOrThrow();
  expect(a1.ok).toBe(true);
});

test('a plan queued behind another is applied when that one closes', async () => {
  const ahead = await push(gw.mesh, { seat, build: 'build-10' });
  await eventually(() => appliesOf(ahead.id)[0], 'the plan ahead applied');
  const behind = await push(gw.mesh, { seat, build: 'build-11', behind: ahead.id, tiers: [[machines.b1], [machines.a1]] });
  expect(behind.state).toBe('QUEUED');
  await everyApplyHeard();
  expect(appliesOf(behind.id)).toEqual([]);
  await closePlan(gw.mesh, ahead.id);
  const first = await eventually(() => appliesOf(behind.id)[0], 'the queued plan applied');
  expect(first).toEqual({ plan: behind.id, tier: 0, build: 'build-11', machines: [machines.b1] });
});

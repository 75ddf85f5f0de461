import pino from 'pino';
import { beforeAll, expect, test } from 'vitest';
import { MeshEvents } from '../../../src/services/events.js';
import { startApplyTimeouts } from '../../../src/services/plans/timeouts.js';
import { useGateway } from '../../fixtures/gateway.js';
import { eventually } from '../../fixtures/live.js';
import { aSeatClaimedBy, useMachinesAgent } from '../../fixtures/plans.js';
import { freshStore } from '../../fixtures/services.js';

// An apply that never reports fails after MESH_APPLY_TIMEOUT_S, here 1 s, and stops its plan.

const TIMEOUT_S = 1;
const { gw, env } = useGateway('plans_timeout', { env: () => ({ MESH_APPLY_TIMEOUT_S: String(TIMEOUT_S) }) });
const { applies, report, everyApplyHeard } = useMachinesAgent(gw, env);

beforeAll(async () => {
  await aSeatClaimedBy(gw, 'svc', 'svc', [
    { machine: 't-a1', site: 'site-a' },
    { machine: 't-b1', site: 'site-b' },
  ]);
  await eventually(() => gw.mesh.leases.isServing(), 'the gateway serving');
});

const PLAN = 'id state stopReason applies { tier machine reportedAt ok detail }';

test('an apply without a report past MESH_APPLY_TIMEOUT_S counts as failed and stops the plan, with the time-out as its stopReason', async () => {
  const pushed = await gw.gql(
    `mutation { push(seat: "svc", build: "t-1", tiers: [["t-a1"], ["t-b1"]], why: "t-1") { ... on MutationPushSuccess { data { id } } } }`,
  );
  const id: string = pushed.data.push.data.id;
  await eventually(() => applies.find((a) => a.plan === id), 'tier 0 applied');
  const stopped = await eventually(async () => {
    const { data } = await gw.gql(`{ plans { ${PLAN} } }`);
    const plan = data.plans.find((p: { id: string }) => p.id === id);
    return plan.state === 'STOPPED' && plan;
  }, 'the plan STOPPED by the time-out');
  expect(stopped).toEqual({
    id,
    state: 'STOPPED',
    stopReason: `machine t-a1's apply timed out: no report within ${TIMEOUT_S} s`,
    applies: [{ tier: 0, machine: 't-a1', reportedAt: null, ok: false, detail: `no report within ${TIMEOUT_S} s` }],
  });

  // A report arriving after the time-out changes nothing: the apply stays failed, tier 1 is never sent.
  const ingested = gw.news.stats.ingested;
  report('t-a1', id, 't-1', true);
  await eventually(() => gw.news.stats.ingested > ingested, 'the late report written');
  await everyApplyHeard();
  const { data } = await gw.gql(`{ plans { ${PLAN} } }`);
  expect(data.plans.find((p: { id: string }) => p.id === id)).toEqual(stopped);
  expect(applies.filter((a) => a.plan === id).map((a) => a.tier)).toEqual([0]);
  const { data: status } = await gw.gql(`{ status { plans { id state stopReason } } }`);
  expect(status.status.plans.find((p: { id: string }) => p.id === id)).toEqual({ id, state: 'STOPPED', stopReason: stopped.stopReason });
});

test('only the replica holding the serving lease sweeps timed-out applies', async () => {
  const store = await freshStore('plans_sweep_lease');
  let serving = false;
  let leaseAsked = 0;
  const timeouts = startApplyTimeouts({
    db: store.db,
    logger: pino({ level: 'silent' }),
    events: new MeshEvents(),
    config: { bounds: { applySeconds: 0.05 } },
    leases: {
      isServing: () => {
        leaseAsked++;
        return serving;
      },
    },
  });
  try {
    await store.db.insertInto('seat').values({ name: 'svc' }).execute();
    const hourAgo = new Date(Date.now() - 3_600_000);
    await store.db
      .insertInto('plan')
      .values({
        id: 'plan-old',
        seat: 'svc',
        build: 'b',
        tiers: JSON.stringify([['m1']]),
        state: 'OPEN',
        tier: 0,
        opened_at: hourAgo,
        tier_started_at: hourAgo,
      })
      .execute();
    await store.db.insertInto('plan_apply').values({ plan: 'plan-old', tier: 0, machine: 'm1', sent_at: hourAgo }).execute();
    const state = async () => (await store.db.selectFrom('plan').select(['state', 'stop_reason']).where('id', '=', 'plan-old').executeTakeFirstOrThrow()).state;

    // Sweeps came due while not serving (each asked the lease): none may have touched the plan.
    const asked = leaseAsked;
    await eventually(() => leaseAsked >= asked + 5, 'five sweeps due while not serving');
    expect(await state()).toBe('OPEN');
    serving = true;
    await eventually(async () => (await state()) === 'STOPPED', 'the plan stopped once this replica serves');
  } finally {
    await timeouts.stop();
    await store.close();
  }
});

import pino from 'pino';
import { beforeAll, expect, test } from 'vitest';
import { MeshEvents } from '../../../src/services/events.js';
import { startApplyTimeouts, sweepApplyTimeouts } from '../../../src/services/plans/timeouts.js';
import type { Store } from '../../../src/store/db.js';
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

/** An OPEN plan of seat `svc` whose one apply (to m1, tier 0) was sent at `sentAt`, written straight to the store. */
async function anOpenPlanSentAt(db: Store, id: string, sentAt: Date): Promise<void> {
  await db
    .insertInto('seat')
    .values({ name: 'svc' })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  await db
    .insertInto('plan')
    .values({ id, seat: 'svc', build: 'b', tiers: JSON.stringify([['m1']]), state: 'OPEN', tier: 0, opened_at: sentAt, tier_started_at: sentAt })
    .execute();
  await db.insertInto('plan_apply').values({ plan: id, tier: 0, machine: 'm1', sent_at: sentAt }).execute();
}

const stateOf = async (db: Store, id: string) => (await db.selectFrom('plan').select('state').where('id', '=', id).executeTakeFirstOrThrow()).state;

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
    // Every report heard up to now, nothing deaf: this test is about the lease, not the heard instant.
    hearing: { current: () => ({ heardUntilMs: Date.now(), writtenUntilMs: Date.now(), deaf: [] }) },
  });
  try {
    await anOpenPlanSentAt(store.db, 'plan-old', new Date(Date.now() - 3_600_000));
    const state = () => stateOf(store.db, 'plan-old');

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

test('an apply is judged at the instant reports are written up to, not the clock nor what is heard: while the news is written only to before its deadline it does not time out', async () => {
  const store = await freshStore('plans_sweep_heard');
  try {
    const sentAt = new Date(Date.now() - 3_600_000);
    await anOpenPlanSentAt(store.db, 'plan-behind', sentAt);
    let writtenUntilMs = sentAt.getTime() + 30_000;
    const mesh = {
      db: store.db,
      logger: pino({ level: 'silent' }),
      events: new MeshEvents(),
      config: { bounds: { applySeconds: 60 } },
      leases: { isServing: () => true },
      // Heard up to now (the follower read every beat), written only up to 30 s after it was sent.
      hearing: { current: () => ({ heardUntilMs: Date.now(), writtenUntilMs, deaf: [] }) },
    };
    // An hour after it was sent by the clock and by what is heard, but reports are written only up to 30 s after: its report may be among the rest.
    expect(await sweepApplyTimeouts(mesh)).toEqual([]);
    expect(await stateOf(store.db, 'plan-behind')).toBe('OPEN');
    writtenUntilMs = sentAt.getTime() + 61_000;
    expect(await sweepApplyTimeouts(mesh)).toEqual(['plan-behind']);
    expect(await stateOf(store.db, 'plan-behind')).toBe('STOPPED');
  } finally {
    await store.close();
  }
});

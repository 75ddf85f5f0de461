import { expect, test } from 'vitest';
import { push } from '../../../src/services/plans/plans.js';
import { resendAwaitedApplies } from '../../../src/services/plans/resends.js';
import { sweepApplyTimeouts } from '../../../src/services/plans/timeouts.js';
import { useGateway } from '../../fixtures/gateway.js';
import { eventually } from '../../fixtures/live.js';
import { useNatsServer } from '../../fixtures/nats-server.js';
import { aSeatClaimedBy, useMachinesAgent } from '../../fixtures/plans.js';

// A nats-server of this file's own, killed and started again; the shared one is never touched.
// nats.js drops what is published while its connection is down (it empties its buffer at each
// redial), so an apply published then, or just before the loss was noticed, never reaches a machine.
const nats = useNatsServer();
// The apply time-out is 8 s: longer than the first test's outage and resends take, shorter than the last test's outage.
const APPLY_TIMEOUT_S = 8;
const { gw, env } = useGateway('applyresend', { env: () => ({ NATS_URL: nats.url, MESH_APPLY_TIMEOUT_S: String(APPLY_TIMEOUT_S) }) });
const { appliesOf, report } = useMachinesAgent(gw, env, () => nats.url);

test('applies sent while NATS was away, or just before, are sent again once it is back: only to the machines still awaited', async () => {
  await aSeatClaimedBy(gw, 'web-before', 'web', [
    { machine: 'before-1', site: 'site-a' },
    { machine: 'before-2', site: 'site-a' },
  ]);
  await aSeatClaimedBy(gw, 'web-during', 'web', [{ machine: 'during-1', site: 'site-a' }]);
  const before = await push(gw.mesh, { seat: 'web-before', build: 'build-1' });
  await eventually(() => appliesOf(before.id)[0], 'the apply sent before the outage heard');
  report('before-1', before.id, 'build-1', true);
  await eventually(
    async () =>
      (await gw.mesh.db.selectFrom('plan_apply').select('ok').where('plan', '=', before.id).where('machine', '=', 'before-1').executeTakeFirst())?.ok === true,
    "before-1's report written",
  );

  await nats.kill();
  const during = await push(gw.mesh, { seat: 'web-during', build: 'build-2' });
  await nats.start();

  const sentDuring = await eventually(() => appliesOf(during.id)[0], 'the apply sent during the outage heard', 30_000);
  expect(sentDuring).toEqual({ plan: during.id, tier: 0, build: 'build-2', machines: ['during-1'] });
  const resent = await eventually(() => appliesOf(before.id)[1], 'the apply before the outage sent again', 30_000);
  expect(resent).toEqual({ plan: before.id, tier: 0, build: 'build-1', machines: ['before-2'] });
}, 90_000);

test('a resend names the applies sent from the loss to the return, not those sent before or since', async () => {
  await aSeatClaimedBy(gw, 'web-window', 'web', [{ machine: 'window-1', site: 'site-a' }]);
  const before = new Date();
  const plan = await push(gw.mesh, { seat: 'web-window', build: 'build-3' });
  await eventually(() => appliesOf(plan.id)[0], 'its apply heard');
  const after = new Date(Date.now() + 1);
  const resentOf = async (since: Date, until: Date) => (await resendAwaitedApplies(gw.mesh, since, until)).filter((a) => a.plan === plan.id);

  expect(await resentOf(before, after)).toEqual([{ plan: plan.id, tier: 0, build: 'build-3', machines: ['window-1'] }]);
  // Sent after the connection came back: it went out on a live connection.
  expect(await resentOf(new Date(before.getTime() - 60_000), before)).toEqual([]);
  // Sent before the loss's look-back: not in doubt.
  expect(await resentOf(after, new Date(after.getTime() + 60_000))).toEqual([]);
});

test('an outage longer than the apply time-out does not time out the applies sent before it: their machines report once NATS is back', async () => {
  await aSeatClaimedBy(gw, 'web-long', 'web', [{ machine: 'long-1', site: 'site-a' }]);
  const plan = await push(gw.mesh, { seat: 'web-long', build: 'build-4' });
  await eventually(() => appliesOf(plan.id)[0], 'its apply heard');
  await nats.kill();
  await new Promise((r) => setTimeout(r, (APPLY_TIMEOUT_S + 2) * 1000));
  await nats.start();
  const backAt = Date.now();
  await eventually(() => gw.mesh.hearing.current().heardUntilMs > backAt, 'the news heard past the outage');
  // A sweep now: sent more than the time-out ago by the clock, well under it by what could be heard.
  expect(await sweepApplyTimeouts(gw.mesh)).not.toContain(plan.id);
  // The machine reports as an agent does until it is heard (what it sends before its own reconnect is lost).
  const state = async () => (await gw.mesh.db.selectFrom('plan').select('state').where('id', '=', plan.id).executeTakeFirstOrThrow()).state;
  const ended = await eventually(
    async () => {
      report('long-1', plan.id, 'build-4', true);
      const now = await state();
      return now !== 'OPEN' && now;
    },
    'the plan ended',
    30_000,
    500,
  );
  expect(ended).toBe('DONE');
}, 90_000);

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
// The apply time-out is 8 s, the outage 10 s: by the clock every apply sent before it is past its time-out.
const APPLY_TIMEOUT_S = 8;
const OUTAGE_MS = (APPLY_TIMEOUT_S + 2) * 1000;
const { gw, env } = useGateway('applyresend', { env: () => ({ NATS_URL: nats.url, MESH_APPLY_TIMEOUT_S: String(APPLY_TIMEOUT_S) }) });
const { appliesOf, report } = useMachinesAgent(gw, env, () => nats.url);

test('an outage longer than the apply time-out: applies sent during it, or just before, are sent again once NATS is back, only to the machines still awaited, none times out, and both plans end DONE', async () => {
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
  const killedAt = Date.now();
  const during = await push(gw.mesh, { seat: 'web-during', build: 'build-2' });
  await new Promise((r) => setTimeout(r, killedAt + OUTAGE_MS - Date.now()));
  await nats.start();
  const backAt = Date.now();

  // A sweep once the news is written past the outage: by the clock both applies are past their
  // time-out, by what could be heard well under it.
  await eventually(() => gw.mesh.hearing.current().writtenUntilMs > backAt, 'the news written past the outage');
  const swept = await sweepApplyTimeouts(gw.mesh);
  expect(swept).not.toContain(before.id);
  expect(swept).not.toContain(during.id);

  const sentDuring = await eventually(() => appliesOf(during.id)[0], 'the apply sent during the outage heard', 30_000);
  expect(sentDuring).toEqual({ plan: during.id, tier: 0, build: 'build-2', machines: ['during-1'] });
  const resent = await eventually(() => appliesOf(before.id)[1], 'the apply before the outage sent again', 30_000);
  expect(resent).toEqual({ plan: before.id, tier: 0, build: 'build-1', machines: ['before-2'] });

  report('before-2', before.id, 'build-1', true);
  report('during-1', during.id, 'build-2', true);
  const stateOf = async (id: string) => (await gw.mesh.db.selectFrom('plan').select('state').where('id', '=', id).executeTakeFirstOrThrow()).state;
  await eventually(async () => (await stateOf(before.id)) !== 'OPEN' && (await stateOf(during.id)) !== 'OPEN', 'both plans ended');
  expect([await stateOf(before.id), await stateOf(during.id)]).toEqual(['DONE', 'DONE']);
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

import { sql } from 'kysely';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { useGateway } from '../../fixtures/gateway.js';
import { aSeatClaimedBy } from '../../fixtures/plans.js';

// A plan verb's act and its record commit together (issue 35): push, stopPlan, resumePlan and
// closePlan commit in their own transaction and send applies after it; their hand-act and their
// call's end are written in that transaction. A record the store refuses (as a replica killed
// between the act's commit and its record would leave it) undoes the act: both, or neither.

const { gw } = useGateway('plan_records');

let n = 0;
let seat: string;
beforeEach(async () => {
  n++;
  seat = `rec-${n}`;
  await aSeatClaimedBy(gw, seat, 'rec', [{ machine: `rec-m-${n}`, site: 'site-a' }]);
});

/** Makes the store refuse every hand-act written to the outbox, as a failure right after the act would. */
const refuseHandActs = () =>
  sql`create or replace function refuse_hand_acts() returns trigger language plpgsql as $$
        begin if new.bucket = 'handActs' then raise exception 'the record is refused (test)'; end if; return new; end $$;
      create trigger refuse_hand_acts before insert on record_outbox for each row execute function refuse_hand_acts()`.execute(gw.mesh.db);
afterEach(async () => {
  await sql`drop trigger if exists refuse_hand_acts on record_outbox`.execute(gw.mesh.db);
});

const mutate = async (field: string, args: string) =>
  (
    await gw.gql(
      `mutation { ${field}(${args}) { __typename ... on Mutation${field[0]!.toUpperCase()}${field.slice(1)}Success { data { id state } } ... on Error { code } } }`,
    )
  ).data?.[field];

const plansOf = async (s: string): Promise<{ id: string; state: string }[]> =>
  (await sql<{ id: string; state: string }>`select id, state from plan where seat = ${s}`.execute(gw.mesh.db)).rows;

/** Hand-acts of a plan: the relay puts them in the bucket soon after the commit. */
const handActsOn = async (plan: string): Promise<string[]> =>
  (await gw.gql(`{ handActs(first: 200) { edges { node { act target } } } }`)).data.handActs.edges
    .map((e: { node: { act: string; target: string } }) => e.node)
    .filter((h: { target: string }) => h.target === plan || h.target.startsWith(`${plan} (`))
    .map((h: { act: string }) => h.act);

test('a push whose hand-act cannot be written leaves no plan; pushed again, the plan and its hand-act are both there', async () => {
  await refuseHandActs();
  const refused = await mutate('push', `seat: "${seat}", build: "b-1", why: "roll b-1"`);
  expect(refused?.__typename).not.toBe('MutationPushSuccess');
  expect(await plansOf(seat)).toEqual([]);
  await sql`drop trigger refuse_hand_acts on record_outbox`.execute(gw.mesh.db);

  const pushed = await mutate('push', `seat: "${seat}", build: "b-1", why: "roll b-1"`);
  expect(pushed.__typename).toBe('MutationPushSuccess');
  expect(await plansOf(seat)).toEqual([{ id: pushed.data.id, state: 'OPEN' }]);
  await expect.poll(() => handActsOn(pushed.data.id), { timeout: 10_000 }).toEqual(['push']);
});

test('stopPlan, resumePlan and closePlan whose hand-act cannot be written leave the plan as it was', async () => {
  const { data: plan } = await mutate('push', `seat: "${seat}", build: "b-2", why: "roll b-2"`);
  await refuseHandActs();
  expect((await mutate('stopPlan', `id: "${plan.id}", why: "halt"`))?.__typename).not.toBe('MutationStopPlanSuccess');
  expect(await plansOf(seat)).toEqual([{ id: plan.id, state: 'OPEN' }]);
  expect((await mutate('closePlan', `id: "${plan.id}", why: "end"`))?.__typename).not.toBe('MutationClosePlanSuccess');
  expect(await plansOf(seat)).toEqual([{ id: plan.id, state: 'OPEN' }]);
  await sql`drop trigger refuse_hand_acts on record_outbox`.execute(gw.mesh.db);

  expect((await mutate('stopPlan', `id: "${plan.id}", why: "halt"`)).__typename).toBe('MutationStopPlanSuccess');
  await refuseHandActs();
  expect((await mutate('resumePlan', `id: "${plan.id}", why: "go on"`))?.__typename).not.toBe('MutationResumePlanSuccess');
  expect(await plansOf(seat)).toEqual([{ id: plan.id, state: 'STOPPED' }]);
  await sql`drop trigger refuse_hand_acts on record_outbox`.execute(gw.mesh.db);

  await expect.poll(() => handActsOn(plan.id), { timeout: 10_000 }).toEqual(['stopPlan', 'push']);
});

test("a plan verb's call ends OK with the plan as it committed, and its hand-act names that call", async () => {
  const { data: plan } = await mutate('push', `seat: "${seat}", build: "b-3", why: "roll b-3"`);
  const handActOf = async () =>
    (await gw.gql(`{ handActs(act: "push", first: 200) { edges { node { target callId } } } }`)).data.handActs.edges
      .map((e: { node: { target: string; callId: string } }) => e.node)
      .find((h: { target: string }) => h.target.startsWith(`${plan.id} (`));
  await expect.poll(handActOf, { timeout: 10_000 }).toBeDefined();
  const { callId } = await handActOf();
  const callOf = async () => (await gw.gql(`query($id: ID!) { call(id: $id) { state answer } }`, { id: callId })).data?.call;
  await expect.poll(async () => (await callOf())?.state, { timeout: 10_000 }).toBe('OK');
  expect(JSON.parse((await callOf()).answer)).toMatchObject({ id: plan.id, state: 'OPEN' });
});

test('a push whose apply cannot be sent after its commit answers pushed, as its record says, and the plan stands', async () => {
  const nc = gw.mesh.bus.nc;
  const publish = nc.publish.bind(nc);
  nc.publish = (subject: string, ...rest: Parameters<typeof nc.publish> extends [string, ...infer R] ? R : never) => {
    if (subject.endsWith('.apply')) throw new Error('the connection closed (test)');
    return publish(subject, ...rest);
  };
  let pushed: { __typename: string; data?: { id: string } };
  try {
    pushed = await mutate('push', `seat: "${seat}", build: "b-4", why: "roll b-4"`);
  } finally {
    nc.publish = publish;
  }
  expect(pushed.__typename).toBe('MutationPushSuccess');
  expect(await plansOf(seat)).toEqual([{ id: pushed.data!.id, state: 'OPEN' }]);
  await expect.poll(() => handActsOn(pushed.data!.id), { timeout: 10_000 }).toEqual(['push']);
});

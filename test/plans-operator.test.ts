import type { Subscription } from '@nats-io/transport-node';
import { afterAll, beforeAll, beforeEach, expect, test } from 'vitest';
import { recordHeartbeats } from '../src/services/machines/machines.js';
import type { ApplyMessage } from '../src/services/plans/rollout.js';
import { defineSeat } from '../src/services/seats/define.js';
import { anAgent, eventually } from './fixtures/live.js';
import { HOLD_SEAT } from './fixtures/operations.js';
import { startTestGateway, type TestEnv, type TestGateway, testEnv } from './fixtures/services.js';

// Plans an operator can follow and finish: push refuses strangers, a plan says why it stopped
// and what each machine answered, a stopped plan resumes, a queued plan opens when the one ahead is DONE.

let env: TestEnv;
let gw: TestGateway;
let agent: Awaited<ReturnType<typeof anAgent>>;
let applies: ApplyMessage[];
let sub: Subscription;

beforeAll(async () => {
  env = await testEnv('plans_operator');
  gw = await startTestGateway(env.env);
  agent = await anAgent();
  applies = [];
  sub = agent.nc.subscribe(`${env.subjects}.plan.*.apply`, { callback: (_err, msg) => void applies.push(msg.json<ApplyMessage>()) });
  await agent.nc.flush();
});
afterAll(async () => {
  sub?.unsubscribe();
  await agent?.close();
  await gw?.stop();
  await env?.cleanup();
});

let n = 0;
let seat: string;
let m: { a1: string; a2: string; b1: string; other: string };
beforeEach(async () => {
  n++;
  seat = `svc-${n}`;
  m = { a1: `oa1-${n}`, a2: `oa2-${n}`, b1: `ob1-${n}`, other: `oother-${n}` };
  await defineSeat(gw.mesh.db, gw.mesh.catalogue, { name: seat, replicated: true });
  // a1, a2 in site a and b1 in site b run a module claiming the seat; `other` runs one that does not.
  await recordHeartbeats(gw.mesh.db, [
    { machine: m.a1, site: 'site-a', modules: ['svc'], claims: { svc: [seat] }, at: new Date() },
    { machine: m.a2, site: 'site-a', modules: ['svc'], claims: { svc: [seat] }, at: new Date() },
    { machine: m.b1, site: 'site-b', modules: ['svc'], claims: { svc: [seat] }, at: new Date() },
    { machine: m.other, site: 'site-b', modules: ['elsewhere'], claims: { elsewhere: [] }, at: new Date() },
  ]);
});

const PLAN = 'id state tier tiers endedAt';
const ERROR = '... on Error { __typename code message }';
const appliesOf = (plan: string) => applies.filter((a) => a.plan === plan);

async function mutate(field: string, args: string) {
  const r = await gw.gql(
    `mutation { ${field}(${args}) { __typename ... on Mutation${field[0]!.toUpperCase()}${field.slice(1)}Success { data { ${PLAN} } } ${ERROR} } }`,
  );
  if (r.errors) throw new Error(JSON.stringify(r.errors));
  const result = r.data[field];
  return result.data ?? result;
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

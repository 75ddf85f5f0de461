import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Transaction } from 'kysely';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { DB } from '../../../src/store/tables.js';
import { useGateway } from '../../fixtures/gateway.js';
import { aMachine, racedAgainstATransaction } from '../../fixtures/mesh.js';

const { gw: gateway, env } = useGateway('plans');
let nc: NatsConnection;
const events: [string, string][] = [];

beforeAll(async () => {
  nc = await connect({ servers: env.env.NATS_URL });
  const claims = { broker: ['queue'] };
  await aMachine(gateway.mesh.db, { name: 'p-a', site: 'eu-2', claims });
  await aMachine(gateway.mesh.db, { name: 'p-c', site: 'eu-1', claims });
  await aMachine(gateway.mesh.db, { name: 'p-b', site: 'eu-1', claims });
  await aMachine(gateway.mesh.db, { name: 'p-z', site: 'us-1', modules: ['other'] });
  gateway.mesh.events.on('plan-opened', (id) => events.push(['plan-opened', id]));
  gateway.mesh.events.on('plan-changed', (id) => events.push(['plan-changed', id]));
  gateway.mesh.events.on('acted', (act) => events.push(['acted', act]));
});
afterAll(async () => {
  await nc?.close();
});

const PLAN = 'id seat build state tier tiers behind openedAt endedAt';
const ERROR = '... on Error { __typename code message }';

async function mutate(field: string, args: string) {
  const r = await gateway.gql(
    `mutation { ${field}(${args}) { __typename ... on Mutation${field[0]!.toUpperCase()}${field.slice(1)}Success { data { ${PLAN} } } ${ERROR} } }`,
  );
  if (r.errors) throw new Error(JSON.stringify(r.errors));
  const result = r.data[field];
  return result.data ?? result;
}

test('push plans one tier per site of the seat’s holders, in name order, and opens at once', async () => {
  events.length = 0;
  const plan = await mutate('push', 'seat: "queue", build: "b1", why: "release 1"');
  expect(plan).toMatchObject({ seat: 'queue', build: 'b1', state: 'OPEN', tier: 0, tiers: [['p-b', 'p-c'], ['p-a']], behind: null, endedAt: null });
  expect(plan.openedAt).not.toBeNull();
  expect(plan.id).toMatch(/^plan-[0-9a-z]+$/);
  expect(events).toEqual(
    expect.arrayContaining([
      ['plan-changed', plan.id],
      ['plan-opened', plan.id],
      ['acted', 'push'],
    ]),
  );
  // One transaction, one announcement: the push has started its rollout (the first tier's applies
  // are written) by the time it answers, and told the replica of the change once.
  expect(events.filter(([event, id]) => event === 'plan-changed' && id === plan.id)).toHaveLength(1);
  expect(events.filter(([event, id]) => event === 'plan-opened' && id === plan.id)).toHaveLength(1);
  const applies = await gateway.mesh.db.selectFrom('plan_apply').select(['machine', 'tier']).where('plan', '=', plan.id).orderBy('machine').execute();
  expect(applies).toEqual([
    { machine: 'p-b', tier: 0 },
    { machine: 'p-c', tier: 0 },
  ]);
});

test('a plan pushed behind another waits QUEUED until that one is CLOSED, then opens', async () => {
  const ahead = await mutate('push', 'seat: "queue", build: "b2", why: "release 2"');
  const behind = await mutate('push', `seat: "queue", build: "b3", behind: "${ahead.id}", tiers: [["p-a"], ["p-b", "p-c"]], why: "release 3"`);
  expect(behind).toMatchObject({ state: 'QUEUED', behind: ahead.id, openedAt: null, tiers: [['p-a'], ['p-b', 'p-c']] });
  expect(await mutate('stopPlan', `id: "${behind.id}", why: "not yet"`)).toMatchObject({
    __typename: 'ConflictError',
    message: `plan ${behind.id} is QUEUED: only an OPEN plan can be stopped`,
  });

  events.length = 0;
  const closed = await mutate('closePlan', `id: "${ahead.id}", why: "b2 is out", cause: "release"`);
  expect(closed).toMatchObject({ id: ahead.id, state: 'CLOSED' });
  expect(closed.endedAt).not.toBeNull();
  expect(events).toEqual(
    expect.arrayContaining([
      ['plan-changed', ahead.id],
      ['plan-changed', behind.id],
      ['plan-opened', behind.id],
      ['acted', 'closePlan'],
    ]),
  );
  const { data } = await gateway.gql(`{ plans(state: OPEN) { id state openedAt } }`);
  const opened = data.plans.find((p: any) => p.id === behind.id);
  expect(opened).toMatchObject({ state: 'OPEN' });
  expect(opened.openedAt).not.toBeNull();

  expect(await mutate('stopPlan', `id: "${behind.id}", why: "tier 0 looks wrong"`)).toMatchObject({ state: 'STOPPED' });
  expect(await mutate('closePlan', `id: "${behind.id}", why: "abandon b3"`)).toMatchObject({ state: 'CLOSED' });
  expect(await mutate('closePlan', `id: "${behind.id}", why: "again"`)).toMatchObject({
    __typename: 'ConflictError',
    message: `plan ${behind.id} is already CLOSED`,
  });
  expect(await mutate('push', `seat: "queue", build: "b4", behind: "${behind.id}", why: "behind a closed plan"`)).toMatchObject({
    state: 'OPEN',
    behind: behind.id,
  });
});

test('plans lists newest first, filtered by state', async () => {
  const { data } = await gateway.gql(`{ all: plans { build createdAt } closed: plans(state: CLOSED) { build } first: plans(first: 1) { build } }`);
  expect(data.all.map((p: any) => p.build)).toEqual(['b4', 'b3', 'b2', 'b1']);
  expect(data.closed.map((p: any) => p.build).sort()).toEqual(['b2', 'b3']);
  expect(data.first).toEqual([{ build: 'b4' }]);
});

test('push resolves the seat through its aliases', async () => {
  const renamed = await gateway.gql(`mutation { renameSeat(from: "queue", to: "queues") { __typename } }`);
  expect(renamed.data.renameSeat.__typename).toBe('MutationRenameSeatSuccess');
  const plan = await mutate('push', 'seat: "queue", build: "b5", why: "through the old name"');
  expect(plan).toMatchObject({ seat: 'queues', state: 'OPEN', tiers: [['p-b', 'p-c'], ['p-a']] });
});

test('bad pushes are typed errors and change nothing', async () => {
  const before = (await gateway.gql(`{ plans { id } }`)).data.plans.length;
  expect(await mutate('push', 'seat: "nope", build: "b", why: "w"')).toMatchObject({ __typename: 'NotFoundError', message: 'no seat named "nope"' });
  expect(await mutate('push', 'seat: "builder", build: "b", why: "w"')).toMatchObject({ __typename: 'ConflictError' });
  expect(await mutate('push', 'seat: "queues", build: "b", tiers: [["p-a", "ghost"]], why: "w"')).toMatchObject({
    __typename: 'NotFoundError',
    message: 'no machine named "ghost"',
  });
  expect(await mutate('push', 'seat: "queues", build: "b", tiers: [["p-a"], ["p-a"]], why: "w"')).toMatchObject({ __typename: 'InvalidError' });
  expect(await mutate('push', 'seat: "queues", build: "b", tiers: [[]], why: "w"')).toMatchObject({ __typename: 'InvalidError' });
  expect(await mutate('push', 'seat: "queues", build: "b.1", why: "w"')).toMatchObject({
    __typename: 'InvalidError',
    message: expect.stringContaining('a dot'),
  });
  expect(await mutate('push', 'seat: "queues", build: "b", behind: "plan-none", why: "w"')).toMatchObject({ __typename: 'NotFoundError' });
  expect(await mutate('stopPlan', 'id: "plan-none", why: "w"')).toMatchObject({ __typename: 'NotFoundError', message: 'no plan named "plan-none"' });
  expect((await gateway.gql(`{ plans { id } }`)).data.plans.length).toBe(before);
});

test('the NATS door runs the same verbs: push, then stop, answered with the plan', async () => {
  const alice = await connect({ servers: env.env.NATS_URL, inboxPrefix: '_INBOX.alice' });
  try {
    const subject = (verb: string) => `${env.subjects}.seat.${env.controller}.${verb}.alice`;
    const pushed = (await alice.request(subject('push'), JSON.stringify({ seat: 'queues', build: 'b6', tiers: [['p-a']], why: 'over NATS' }))).json<any>();
    expect(pushed).toMatchObject({ ok: true, answer: { seat: 'queues', build: 'b6', state: 'OPEN', tiers: [['p-a']] } });
    const stopped = (await alice.request(subject('stopPlan'), JSON.stringify({ id: pushed.answer.id, why: 'over NATS too' }))).json<any>();
    expect(stopped).toMatchObject({ ok: true, answer: { id: pushed.answer.id, state: 'STOPPED' } });
    const listed = (await alice.request(subject('plans'), JSON.stringify({ state: 'STOPPED' }))).json<any>();
    expect(listed.answer.map((p: any) => p.id)).toContain(pushed.answer.id);
    const bad = (await alice.request(subject('plans'), JSON.stringify({ state: 'SLEEPING' }))).json<any>();
    expect(bad).toEqual({ ok: false, error: { code: 'INVALID', message: 'state must be one of QUEUED, OPEN, STOPPED, DONE, CLOSED' } });
    const acts = (await gateway.gql(`{ handActs(first: 2) { edges { node { actor act target } } } }`)).data.handActs.edges.map((e: any) => e.node);
    expect(acts).toEqual([
      { actor: 'alice', act: 'stopPlan', target: pushed.answer.id },
      { actor: 'alice', act: 'push', target: `${pushed.answer.id} (b6 to queues)` },
    ]);
  } finally {
    await alice.close();
  }
});

test('a push racing the rename of its seat waits for it and opens under the new name, never INTERNAL', async () => {
  expect((await gateway.gql(`mutation { defineSeat(input: { name: "race" }) { __typename } }`)).data.defineSeat.__typename).toBe('MutationDefineSeatSuccess');
  await aMachine(gateway.mesh.db, { name: 'p-race', site: 'eu-3', claims: { broker: ['race'] } });
  // renameSeat's own transaction (the seat locked, renamed, its old name an alias), held open while the push runs.
  const rename = {
    locks: (tx: Transaction<DB>) => tx.selectFrom('seat').select('name').where('name', '=', 'race').forUpdate().execute(),
    commits: async (tx: Transaction<DB>) => {
      await tx.updateTable('seat').set({ name: 'race-renamed' }).where('name', '=', 'race').execute();
      await tx.insertInto('seat_alias').values({ alias: 'race', seat: 'race-renamed' }).execute();
    },
  };
  const pushed = await racedAgainstATransaction(gateway.mesh.db, rename, () => mutate('push', 'seat: "race", build: "b-race", why: "racing a rename"'));
  expect(pushed).toMatchObject({ seat: 'race-renamed', build: 'b-race', state: 'OPEN', tiers: [['p-race']] });
});

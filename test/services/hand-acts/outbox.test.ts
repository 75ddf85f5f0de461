import { sql } from 'kysely';
import { afterAll, expect, test } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { type ChildGateway, spawnGateway } from '../../fixtures/child.js';
import { useGateway } from '../../fixtures/gateway.js';
import { useNatsServer } from '../../fixtures/nats-server.js';
import { DEFINE_SEAT } from '../../fixtures/operations.js';

// The act and its record commit together (issue 35): a NATS of the file's own is stopped between
// an act's commit and its hand-act's put, and the replica that committed it is SIGKILLed.
const nats = useNatsServer();
// Writes are retried 3 s while NATS is away (MESH_KV_WRITE_RETRY_S, 15 s by default), and a relay's
// claim on its rows lapses after 2 s (MESH_OUTBOX_CLAIM_S, 10 s by default): what these tests judge
// happens after the retry gives up and after a dead replica's claim lapses, whatever their length.
const SHORT_WAITS = { MESH_KV_WRITE_RETRY_S: '3', MESH_OUTBOX_CLAIM_S: '2' };
const { gw: b, env } = useGateway('outbox', { env: () => ({ NATS_URL: nats.url, ...SHORT_WAITS }) });
let a: ChildGateway | undefined;
afterAll(async () => {
  await a?.kill('SIGKILL').catch(() => undefined);
});

/** The hand-acts of one target on a replica's log, as a reader sees them. */
const handActsOf = async (gateway: { gql: typeof b.gql }, target: string): Promise<{ id: string; act: string; actor: string }[]> =>
  (await gateway.gql(`query($t: String) { handActs(target: $t, first: 50) { edges { node { id act actor } } } }`, { t: target })).data?.handActs.edges.map(
    (e: { node: { id: string; act: string; actor: string } }) => e.node,
  ) ?? [];

const waitingInOutbox = async () => Number((await sql<{ n: string }>`select count(*)::text as n from record_outbox`.execute(b.mesh.db)).rows[0]!.n);

/** The code a mutation answered: a typed error as data, or the error of the response. */
const codeOf = (response: { data?: any; errors?: { extensions?: Record<string, unknown> }[] }, field: string) =>
  response.data?.[field]?.code ?? response.errors?.[0]?.extensions?.code ?? response.data?.[field]?.__typename;

test('seats defined while NATS is away are answered as defined, and each hand-act appears once NATS is back', async () => {
  await nats.kill();
  const names = [1, 2, 3, 4, 5].map((i) => `nats-away-${i}`);
  try {
    // At once: each answers after waiting at most DELIVER_WAIT_MS (1.5 s) for its own record's put.
    const answers = await Promise.all(names.map((name) => b.gql(DEFINE_SEAT, { input: { name } })));
    for (const answer of answers) {
      expect(answer.errors).toBeUndefined();
      expect(answer.data.defineSeat.__typename).toBe('MutationDefineSeatSuccess');
    }
    expect(await waitingInOutbox()).toBeGreaterThanOrEqual(5);
  } finally {
    await nats.start();
  }
  for (const name of names) {
    await expect.poll(async () => (await handActsOf(b, name)).map((h) => h.act), { timeout: 30_000, interval: 500 }).toEqual(['defineSeat']);
  }
  await expect.poll(waitingInOutbox, { timeout: 10_000 }).toBe(0);
}, 90_000);

test("an act committed by a replica SIGKILLed before its hand-act's put is relayed by another replica, once", async () => {
  a = await spawnGateway({ ...env.env, NATS_URL: nats.url, ...SHORT_WAITS });
  await nats.kill();
  let answer: { data?: any; errors?: unknown[] };
  try {
    answer = await a.gql(DEFINE_SEAT, { input: { name: 'killed-before-relay' } });
    await a.kill('SIGKILL');
  } finally {
    await nats.start();
  }
  expect(answer.errors).toBeUndefined();
  expect(answer.data.defineSeat.__typename).toBe('MutationDefineSeatSuccess');
  // Replica b relays it (after the dead replica's claim, if it held one, lapses).
  await expect.poll(async () => (await handActsOf(b, 'killed-before-relay')).length, { timeout: 40_000, interval: 500 }).toBe(1);
  await expect.poll(waitingInOutbox, { timeout: 10_000 }).toBe(0);
}, 120_000);

test('a record relayed twice is seen once: the second put finds it there and writes nothing', async () => {
  const [kept] = await handActsOf(b, 'killed-before-relay');
  expect(kept).toBeDefined();
  const before = await b.mesh.buckets.handActs.get(kept!.id);
  // As if a replica had put it and died before deleting its outbox row.
  await sql`insert into record_outbox (bucket, id, body) values ('handActs', ${kept!.id}, ${before!.string()})`.execute(b.mesh.db);
  await expect.poll(waitingInOutbox, { timeout: 10_000 }).toBe(0);
  expect((await b.mesh.buckets.handActs.get(kept!.id))?.revision).toBe(before!.revision);
  expect(await handActsOf(b, 'killed-before-relay')).toHaveLength(1);
});

test('an acting verb while NATS is away is refused UNAVAILABLE naming NATS, not INTERNAL, and nothing is done', async () => {
  expect((await b.gql(DEFINE_SEAT, { input: { name: 'kept-while-away' } })).data.defineSeat.__typename).toBe('MutationDefineSeatSuccess');
  await nats.kill();
  let refused: { data?: any; errors?: { extensions?: Record<string, unknown> }[] };
  try {
    refused = await b.gql(`mutation { retireSeat(seat: "kept-while-away", why: "tidy") { __typename ... on Error { code message } } }`);
  } finally {
    await nats.start();
  }
  expect(codeOf(refused, 'retireSeat')).toBe('UNAVAILABLE');
  expect(JSON.stringify(refused)).toMatch(/NATS is unavailable: retireSeat was not done/);
  expect((await b.gql(`{ seat(name: "kept-while-away") { name } }`)).data.seat).toEqual({ name: 'kept-while-away' });
}, 90_000);

test('MESH_OUTBOX_CLAIM_S is 10 s unless set, and a claim under 1 s is refused naming the variable', () => {
  expect(loadConfig({}).outboxClaimSeconds).toBe(10);
  expect(loadConfig({ MESH_OUTBOX_CLAIM_S: '2' }).outboxClaimSeconds).toBe(2);
  expect(() => loadConfig({ MESH_OUTBOX_CLAIM_S: '0.5' })).toThrow(/MESH_OUTBOX_CLAIM_S must be a number ≥ 1, got "0.5"/);
});

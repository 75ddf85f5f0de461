import { sql } from 'kysely';
import { expect, test } from 'vitest';
import { useGateway } from '../../fixtures/gateway.js';
import { useNatsServer } from '../../fixtures/nats-server.js';
import { aSeatClaimedBy } from '../../fixtures/plans.js';

// A push while NATS is away (a NATS of the file's own, stopped) cannot record its call RUNNING, so
// it is refused before its act: UNAVAILABLE naming NATS, and no plan without a record (issue 35).
const nats = useNatsServer();
// Writes are retried 3 s while NATS is away (MESH_KV_WRITE_RETRY_S, 15 s by default): the push is refused once the retry gives up.
const { gw } = useGateway('plan_records_away', { env: () => ({ NATS_URL: nats.url, MESH_KV_WRITE_RETRY_S: '3' }) });

const codeOf = (response: { data?: any; errors?: { extensions?: Record<string, unknown> }[] }) =>
  response.data?.push?.code ?? response.errors?.[0]?.extensions?.code ?? response.data?.push?.__typename;

test('a push while NATS is away is refused UNAVAILABLE naming NATS, and no plan is made; once NATS is back it is pushed with its hand-act', async () => {
  await aSeatClaimedBy(gw, 'away-seat', 'away', [{ machine: 'away-m', site: 'site-a' }]);
  const PUSH = `mutation { push(seat: "away-seat", build: "b-away", why: "roll") { __typename ... on MutationPushSuccess { data { id } } ... on Error { code message } } }`;
  await nats.kill();
  let refused: { data?: any; errors?: { extensions?: Record<string, unknown> }[] };
  try {
    refused = await gw.gql(PUSH);
  } finally {
    await nats.start();
  }
  expect(codeOf(refused)).toBe('UNAVAILABLE');
  expect(JSON.stringify(refused)).toMatch(/NATS is unavailable: push was not done/);
  expect((await sql<{ id: string }>`select id from plan where seat = 'away-seat'`.execute(gw.mesh.db)).rows).toEqual([]);

  let pushed: { data?: any } = {};
  await expect.poll(async () => (pushed = await gw.gql(PUSH)).data?.push?.__typename, { timeout: 30_000, interval: 500 }).toBe('MutationPushSuccess');
  const id = pushed.data.push.data.id;
  const handActs = async () =>
    (await gw.gql(`{ handActs(act: "push", first: 50) { edges { node { target } } } }`)).data?.handActs.edges.filter((e: { node: { target: string } }) =>
      e.node.target.startsWith(`${id} (`),
    ).length;
  await expect.poll(handActs, { timeout: 10_000, interval: 250 }).toBe(1);
}, 90_000);

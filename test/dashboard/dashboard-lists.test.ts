import { expect, test } from 'vitest';
import { useGateway } from '../fixtures/gateway.js';
import { aMachine } from '../fixtures/mesh.js';

const { gw, env } = useGateway('dashlists');

const names = (list: { name: string }[]) => list.map((m) => m.name);

test('machines are filtered by state, judged as Machine.state is, and by site', async () => {
  const beat = gw.config.heartbeatSeconds * 1000;
  const ago = (intervals: number) => new Date(Date.now() - intervals * beat);
  await aMachine(gw.mesh.db, { name: 'up-eu', site: 'eu-1', at: ago(0) });
  await aMachine(gw.mesh.db, { name: 'late-eu', site: 'eu-1', at: ago(3) });
  await aMachine(gw.mesh.db, { name: 'silent-eu', site: 'eu-1', at: ago(10) });
  await aMachine(gw.mesh.db, { name: 'up-us', site: 'us-2', at: ago(0) });
  await aMachine(gw.mesh.db, { name: 'silent-us', site: 'us-2', at: ago(20) });
  const list = async (args: string) => (await gw.gql(`{ machines${args} { name state site } }`)).data.machines;
  expect(names(await list(''))).toEqual(['late-eu', 'silent-eu', 'silent-us', 'up-eu', 'up-us']);
  expect(await list('(state: UP)')).toEqual([
    { name: 'up-eu', state: 'UP', site: 'eu-1' },
    { name: 'up-us', state: 'UP', site: 'us-2' },
  ]);
  expect(names(await list('(state: LATE)'))).toEqual(['late-eu']);
  expect(names(await list('(state: SILENT)'))).toEqual(['silent-eu', 'silent-us']);
  expect(names(await list('(site: "us-2")'))).toEqual(['silent-us', 'up-us']);
  expect(names(await list('(state: SILENT, site: "eu-1")'))).toEqual(['silent-eu']);
  expect(await list('(site: "nowhere")')).toEqual([]);
  const { errors } = await gw.gql(`{ machines(site: "a.b") { name } }`);
  expect(errors?.[0]).toMatchObject({ extensions: { code: 'INVALID' } });
});

const record = (act: string, target: string, why: string) =>
  gw.gql(`mutation($act: String!, $target: String, $why: String!) { recordHandAct(act: $act, target: $target, why: $why) { __typename } }`, {
    act,
    target,
    why,
  });

test('hand-acts are filtered by actor, act and target, through GraphQL and the NATS verb', async () => {
  await record('restarted-agent', 'm1', 'first');
  await record('restarted-agent', 'm2', 'second');
  await record('freed-disk', 'm1', 'third');
  const whys = async (args: string) =>
    (await gw.gql(`{ handActs${args} { edges { node { why } } } }`)).data.handActs.edges.map((e: { node: { why: string } }) => e.node.why);
  expect(await whys('(act: "restarted-agent")')).toEqual(['second', 'first']);
  expect(await whys('(target: "m1")')).toEqual(['third', 'first']);
  expect(await whys('(act: "restarted-agent", target: "m1")')).toEqual(['first']);
  expect(await whys('(actor: "local", act: "freed-disk")')).toEqual(['third']);
  expect(await whys('(actor: "someone-else")')).toEqual([]);
  const reply = await gw.mesh.bus.nc.request(`${env.subjects}.seat.${env.controller}.handActs`, JSON.stringify({ act: 'restarted-agent', target: 'm2' }), {
    timeout: 5000,
  });
  const body = reply.json<{ ok: boolean; answer: { handActs: { why: string }[]; hasNextPage: boolean } }>();
  expect(body.ok).toBe(true);
  expect(body.answer.handActs.map((a) => a.why)).toEqual(['second']);
  expect(body.answer.hasNextPage).toBe(false);
});

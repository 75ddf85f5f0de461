import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Heartbeat } from '../../../src/services/machines/machines.js';
import { ingestBatch } from '../../../src/services/news/batch.js';
import { judgeNews } from '../../../src/services/news/wire.js';
import { useGateway } from '../../fixtures/gateway.js';
import { anAgent, eventually } from '../../fixtures/live.js';

// Liveness is judged by when the gateway heard a machine (the news stream's time), never by the
// agent's clock: a clock minutes off either way keeps a beating machine UP, and a beat heard
// before the last one stored (delivered again) changes nothing. 1 s heartbeats: LATE past 1.5 s
// of heard news without a beat of the machine's own, SILENT past 6 s.
const { gw, env } = useGateway('heard-time', { env: { MESH_HEARTBEAT_S: '1' } });
let agent: Awaited<ReturnType<typeof anAgent>>;
const beating: NodeJS.Timeout[] = [];

beforeAll(async () => {
  agent = await anAgent();
});
afterAll(async () => {
  for (const timer of beating) clearInterval(timer);
  await agent?.close();
});

const MACHINES = '{ status { heardUntil machines { name state } } machines { name state } }';
const s = (seconds: number) => seconds * 1000;

test('an agent beating every second whose clock is 40 s behind, or 10 minutes ahead, stays UP', async () => {
  const beat = (machine: string, offsetMs: number) => () =>
    agent.heartbeat(env.subjects, machine, { site: 'eu-1', modules: ['agent'], at: new Date(Date.now() + offsetMs).toISOString() });
  for (const [machine, offset] of [
    ['slow-clock', -s(40)],
    ['fast-clock', s(600)],
    ['true-clock', 0],
  ] as const) {
    const once = beat(machine, offset);
    once();
    beating.push(setInterval(once, 1_000));
  }
  const startedAt = Date.now();
  // Past a SILENT threshold (6 s) of heard news: every state seen on the way is UP.
  while (Date.now() - startedAt < s(9)) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const { data } = await gw.gql(MACHINES);
    const shown = [...(data?.status.machines ?? []), ...(data?.machines ?? [])].filter((m: { name: string }) => m.name.endsWith('-clock'));
    for (const machine of shown) expect(machine, `${machine.name} at ${data.status.heardUntil}`).toMatchObject({ state: 'UP' });
  }
  const { data } = await gw.gql(MACHINES);
  expect(data.status.machines.map((m: { name: string }) => m.name)).toEqual(expect.arrayContaining(['fast-clock', 'slow-clock', 'true-clock']));
  // What the agent says is kept as information only: the instant shown is when it was heard.
  const { data: one } = await gw.gql('{ machine(name: "slow-clock") { lastHeardAt } }');
  expect(Math.abs(Date.parse(one.machine.lastHeardAt) - Date.now())).toBeLessThan(s(5));
}, 30_000);

const beatHeard = (machine: string, modules: string[], heardAt: Date, at?: Date): Heartbeat => {
  const news = judgeNews(
    env.subjects,
    `${env.subjects}.news.machine.${machine}`,
    JSON.stringify({ kind: 'heartbeat', modules, at: at?.toISOString() }),
    heardAt,
  );
  if (news.type !== 'heartbeat') throw new Error(`not a heartbeat: ${JSON.stringify(news)}`);
  return news.heartbeat;
};

const running = async (machine: string) =>
  (await gw.mesh.db.selectFrom('assignment').select('module').where('machine', '=', machine).where('running', '=', true).orderBy('module').execute()).map(
    (a) => a.module,
  );
const machineRow = (machine: string) => gw.mesh.db.selectFrom('machine').selectAll().where('name', '=', machine).executeTakeFirstOrThrow();

test("a beat heard before the machine's last one (delivered again) changes nothing but the count: not its modules, not its last heard", async () => {
  const t = Date.now() - s(2);
  await ingestBatch(gw.mesh, [{ type: 'heartbeat', heartbeat: beatHeard('redelivered-1', ['agent', 'broker'], new Date(t)) }]);
  await ingestBatch(gw.mesh, [{ type: 'heartbeat', heartbeat: beatHeard('redelivered-1', ['agent'], new Date(t + 1_000)) }]);
  const before = await machineRow('redelivered-1');
  // The first beat again, as a redelivery brings it: heard (stored) before the one written.
  await ingestBatch(gw.mesh, [{ type: 'heartbeat', heartbeat: beatHeard('redelivered-1', ['agent', 'broker'], new Date(t)) }]);
  expect(await running('redelivered-1')).toEqual(['agent']);
  // A beat that changes nothing stored is counted at the checkpoint (issue 37): flushed here.
  await gw.news.flush();
  const after = await machineRow('redelivered-1');
  expect(new Date(after.last_heard_at).getTime()).toBe(t + 1_000);
  // Counted (news is written at least once), and nothing else.
  expect(Number(after.heartbeats)).toBe(Number(before.heartbeats) + 1);
  // The derived holdings follow the modules: the composition shows the machine without broker.
  await gw.news.flush();
  gw.composer.request('asked');
  await eventually(
    () => gw.mesh.status.current()?.machines.find((m) => m.name === 'redelivered-1' && m.modules.join() === 'agent'),
    'redelivered-1 shown running agent alone',
  );
});

test('a beat whose agent dates it before the last one heard is still news: it is judged by when it was heard, its modules stand', async () => {
  const t = Date.now();
  await ingestBatch(gw.mesh, [{ type: 'heartbeat', heartbeat: beatHeard('behind-clock', ['agent'], new Date(t - 500)) }]);
  await ingestBatch(gw.mesh, [{ type: 'heartbeat', heartbeat: beatHeard('behind-clock', ['agent', 'web'], new Date(t), new Date(t - s(40))) }]);
  expect(await running('behind-clock')).toEqual(['agent', 'web']);
  expect(new Date((await machineRow('behind-clock')).last_heard_at).getTime()).toBe(t);
});

test('a machine running modules named like every object’s properties (constructor, toString) is recorded with their claims', async () => {
  agent.heartbeat(env.subjects, 'proto-named', { site: 'eu-1', modules: ['constructor', 'toString', 'broker'], claims: { broker: ['registry'] } });
  const machine = await eventually(async () => {
    const { data } = await gw.gql('{ machines { name modules } }');
    return (data?.machines as { name: string; modules: string[] }[] | undefined)?.find((m) => m.name === 'proto-named');
  }, 'the machine recorded');
  expect(machine.modules).toEqual(['broker', 'constructor', 'toString']);
  expect(gw.news.stats.poison).toBe(0);
});

import { afterAll, beforeAll, expect, test } from 'vitest';
import { type ChildGateway, spawnGateway } from '../../fixtures/child.js';
import { anAgent, eventually } from '../../fixtures/live.js';
import { useNatsServer } from '../../fixtures/nats-server.js';
import { type TestEnv, testEnv } from '../../fixtures/services.js';

// The smaller, repeatable scenario: two replicas, 2 s heartbeats (LATE past 3 s, SILENT past
// 12 s), ten machines stop; B is SIGSTOPped a second later; A shows the ten SILENT; NATS (a server
// of this file's own) is restarted; B resumes and takes over from A (SIGKILL). B's deaf span reaches
// back to its last read before the freeze: it must never show the ten LATE or UP again.
const HEARTBEAT_S = 2;
const TEN = Array.from({ length: 10 }, (_, i) => `dead-${i}`);
const nats = useNatsServer();
let env: TestEnv;
const replicas: ChildGateway[] = [];

beforeAll(async () => {
  env = await testEnv('raise');
});
afterAll(async () => {
  for (const r of replicas) {
    r.child.kill('SIGCONT');
    await r.kill('SIGKILL');
  }
  await env?.cleanup();
}, 60_000);

const serving = (r: ChildGateway) => {
  const last = r
    .output()
    .split('\n')
    .findLast((l) => l.includes('serving lease taken') || l.includes('serving lease lost'));
  return last?.includes('serving lease taken') === true;
};
const statesOn = async (r: ChildGateway) => {
  const { data } = await r.gql<{ status: { seq: number; machines: { name: string; state: string }[] } }>('{ status { seq machines { name state } } }');
  return data?.status;
};

test('a replica frozen while the other showed stopped machines SILENT, resumed after a NATS restart and taking over, never shows them LATE or UP again', async () => {
  const childEnv = { ...env.env, NATS_URL: nats.url, MESH_HEARTBEAT_S: String(HEARTBEAT_S) };
  const a = await spawnGateway(childEnv);
  replicas.push(a);
  await eventually(() => serving(a) || undefined, 'A serving', 20_000, 100);
  const b = await spawnGateway(childEnv);
  replicas.push(b);
  const agent = await anAgent(nats.url);
  const beat = () => {
    for (const m of TEN) agent.heartbeat(env.subjects, m, { site: 'eu-1', modules: ['agent'] });
  };
  beat();
  const beating = setInterval(beat, 1_000);
  try {
    for (const r of [a, b])
      await eventually(async () => (await statesOn(r))?.machines.filter((m) => m.state === 'UP').length === TEN.length || undefined, 'all ten UP', 20_000, 200);
  } finally {
    clearInterval(beating);
  }
  await agent.close();
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  b.child.kill('SIGSTOP');
  await eventually(async () => (await statesOn(a))?.machines.every((m) => m.state === 'SILENT') || undefined, 'A showing the ten SILENT', 30_000, 250);
  const silentSeq = (await statesOn(a))!.seq;
  await nats.restart({ downMs: 1_000 });
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  b.child.kill('SIGCONT');
  await a.kill('SIGKILL');

  // B takes over: every composition it answers with, for 12 s after, shows the ten SILENT.
  const seen: string[] = [];
  const tookAt = await eventually(() => (serving(b) ? Date.now() : undefined), 'B taking the serving lease', 30_000, 100);
  while (Date.now() - tookAt < 12_000) {
    const status = await statesOn(b).catch(() => undefined);
    if (status && status.seq > silentSeq) for (const m of status.machines) if (m.state !== 'SILENT') seen.push(`seq ${status.seq}: ${m.name} ${m.state}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  expect(seen.slice(0, 10)).toEqual([]);
  // ...and their history: UP, LATE, SILENT, and never anything after SILENT.
  const HISTORY = 'query($name: String!) { machineHistory(name: $name) { ... on QueryMachineHistorySuccess { data { state } } } }';
  for (const m of TEN) {
    const { data } = await b.gql<{ machineHistory: { data: { state: string | null }[] } }>(HISTORY, { name: m });
    const states = data!.machineHistory.data.map((c) => c.state).filter((s) => s !== null);
    expect(states, m).toEqual(['UP', 'LATE', 'SILENT']);
  }
}, 180_000);

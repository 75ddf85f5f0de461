import { afterAll, beforeAll, expect, test } from 'vitest';
import { useGateway } from '../../fixtures/gateway.js';
import { anAgent, eventually } from '../../fixtures/live.js';
import { startTestGateway, type TestGateway } from '../../fixtures/services.js';

const { gw: serving, env } = useGateway('stream_replicas');
let agent: Awaited<ReturnType<typeof anAgent>>;
const replicas: TestGateway[] = [];

beforeAll(async () => {
  await eventually(() => serving.mesh.status.current(), 'the first composition');
  agent = await anAgent();
});
afterAll(async () => {
  for (const r of replicas) await r.stop().catch(() => undefined);
  await agent?.close();
});

const has = (gw: TestGateway, machine: string) => gw.mesh.status.current()?.machines.some((m) => m.name === machine);

test('a replica restarted rebuilds from the last snapshot and the deltas after it, and holds what the serving replica holds', async () => {
  const first = await startTestGateway(env.env);
  replicas.push(first);
  agent.heartbeat(env.subjects, 'r-1', { site: 'eu-1', modules: ['broker'] });
  await eventually(() => has(first, 'r-1'), 'r-1 on the replica');
  expect(first.mesh.status.streamStats().deltas + first.mesh.status.streamStats().snapshots).toBeGreaterThan(0);
  await first.stop();
  replicas.pop();

  // While it is down, the mesh moves on: deltas only.
  for (const name of ['r-2', 'r-3']) {
    agent.heartbeat(env.subjects, name, { site: 'eu-2', modules: ['agent'] });
    await eventually(() => has(serving, name), `${name} composed`);
  }
  const again = await startTestGateway(env.env);
  replicas.push(again);
  await eventually(() => again.mesh.status.current()?.seq === serving.mesh.status.current()?.seq, 'the restarted replica to catch up');
  expect(again.mesh.status.current()).toEqual(serving.mesh.status.current());
  expect(again.mesh.status.streamStats().snapshots).toBeGreaterThanOrEqual(1);
  expect(again.mesh.status.streamStats().gaps).toBe(0);

  // And it follows live deltas, answering status as the serving replica does.
  agent.heartbeat(env.subjects, 'r-4', { site: 'eu-1', modules: ['broker'] });
  await eventually(() => has(again, 'r-4'), 'r-4 on the restarted replica');
  // Both answer at the same seq before they are compared: a comparison skipped when the seqs
  // differ would skip it exactly when the replica lags.
  const [a, b] = await eventually(async () => {
    const both = await Promise.all([
      serving.gql('{ status { seq machines { name state site } } }'),
      again.gql('{ status { seq machines { name state site } } }'),
    ]);
    return both[0].data.status.seq === both[1].data.status.seq ? both : undefined;
  }, 'both replicas answering status at the same seq');
  expect(b.data).toEqual(a.data);
  expect(again.mesh.status.streamStats().deltas).toBeGreaterThan(0);
});

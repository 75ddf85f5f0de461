import { expect, test } from 'vitest';
import { ingestBatch } from '../../../src/services/news/batch.js';
import { judgeNews } from '../../../src/services/news/wire.js';
import { useGateway } from '../../fixtures/gateway.js';

// Issue 37: a beat that changes nothing stored writes nothing; its machine's last-heard is read from
// memory by every reader, and reaches the store with the checkpoint (MESH_CHECKPOINT_S, long here so
// no checkpoint runs by itself during the test: `news.flush()` writes it).
const { gw, env } = useGateway('unchanged-beats', { env: { MESH_CHECKPOINT_S: '300' } });

const beat = (machine: string, heardAtMs: number, modules: string[]) => {
  const news = judgeNews(
    env.subjects,
    `${env.subjects}.news.machine.${machine}`,
    JSON.stringify({ kind: 'heartbeat', site: 'eu-1', modules }),
    new Date(heardAtMs),
  );
  if (news.type !== 'heartbeat') throw new Error(`not a heartbeat: ${JSON.stringify(news)}`);
  return news;
};
const row = (machine: string) => gw.mesh.db.selectFrom('machine').selectAll().where('name', '=', machine).executeTakeFirstOrThrow();
const writesOfMachines = (sql: readonly string[]) => sql.filter((s) => /\b(insert|update|delete)\b/i.test(s) && /\b(machine|assignment)\b/i.test(s));

test('a beat that changes nothing stored writes no row; readers show it at once from memory, the store at the checkpoint', async () => {
  const t0 = Date.now() - 20_000;
  await ingestBatch(gw.mesh, [beat('steady-1', t0, ['broker'])]);
  expect(Number((await row('steady-1')).heartbeats)).toBe(1);

  gw.statements.reset();
  await ingestBatch(gw.mesh, [beat('steady-1', t0 + 10_000, ['broker'])]);
  expect(writesOfMachines(gw.statements.sql)).toEqual([]);
  const stored = await row('steady-1');
  expect(Number(stored.heartbeats)).toBe(1);
  expect(new Date(stored.last_heard_at).getTime()).toBe(t0);

  const { data } = await gw.gql('{ machine(name: "steady-1") { lastHeardAt heartbeats } machines { name lastHeardAt } }');
  expect(data.machine).toEqual({ lastHeardAt: new Date(t0 + 10_000).toISOString(), heartbeats: 1 });
  expect(data.machines.find((m: { name: string }) => m.name === 'steady-1').lastHeardAt).toBe(new Date(t0 + 10_000).toISOString());

  await gw.news.flush();
  const checkpointed = await row('steady-1');
  expect(Number(checkpointed.heartbeats)).toBe(2);
  expect(new Date(checkpointed.last_heard_at).getTime()).toBe(t0 + 10_000);
});

test('a beat that changes the modules is written at once, with its count', async () => {
  const t0 = Date.now() - 20_000;
  await ingestBatch(gw.mesh, [beat('changing-1', t0, ['broker'])]);
  await ingestBatch(gw.mesh, [beat('changing-1', t0 + 10_000, ['broker', 'web'])]);
  const stored = await row('changing-1');
  expect(Number(stored.heartbeats)).toBe(2);
  expect(new Date(stored.last_heard_at).getTime()).toBe(t0 + 10_000);
  const running = await gw.mesh.db
    .selectFrom('assignment')
    .select('module')
    .where('machine', '=', 'changing-1')
    .where('running', '=', true)
    .orderBy('module')
    .execute();
  expect(running.map((a) => a.module)).toEqual(['broker', 'web']);
});

test('the first beats of a machine are stored even when this replica already heard a later beat of it (its batch split by redelivery): none is owed to a row that does not exist', async () => {
  const t0 = Date.now() - 20_000;
  // The follower of the news stream runs ahead of the ingest: it heard the machine's later beat.
  gw.mesh.hearing.machines.note('split-1', t0 + 5_000, t0 + 5_000);
  await ingestBatch(gw.mesh, [beat('split-1', t0, ['broker']), beat('split-1', t0 + 1_000, ['broker'])]);
  // A checkpoint falls between the two batches (every MESH_CHECKPOINT_S).
  await gw.news.flush();
  await ingestBatch(gw.mesh, [beat('split-1', t0 + 5_000, ['broker'])]);
  await gw.news.flush();
  const stored = await row('split-1');
  expect(Number(stored.heartbeats)).toBe(3);
  expect(new Date(stored.last_heard_at).getTime()).toBe(t0 + 5_000);
});

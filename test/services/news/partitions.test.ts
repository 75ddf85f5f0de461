import { afterAll, beforeAll, expect, test } from 'vitest';
import { NEWS_PARTITIONS, partitionOf, partitionOwners } from '../../../src/services/news/partitions.js';
import { spawnGateway } from '../../fixtures/child.js';
import { useGateway } from '../../fixtures/gateway.js';
import { anAgent, eventually } from '../../fixtures/live.js';
import { heartbeatsOf, newsDrained } from '../../fixtures/news.js';
import { startTestGateway, type TestGateway } from '../../fixtures/services.js';

// Issue 37: each replica writes a share of the news, by partition, and hands it over when it goes.
const { gw, env } = useGateway('partitions');
let agent: Awaited<ReturnType<typeof anAgent>>;

beforeAll(async () => {
  agent = await anAgent();
});
afterAll(async () => {
  await agent?.close();
});

const root = () => env.subjects;
const beat = (prefix: string, n: number) => {
  for (let i = 0; i < n; i++) agent.heartbeat(root(), `${prefix}-${i}`, { site: 'eu-1', modules: ['broker'] });
};
const everyOnce = async (prefix: string, n: number) => {
  await eventually(async () => Object.keys(await heartbeatsOf(gw.mesh.db, `${prefix}-`)).length === n, `every ${prefix} machine written`, 20_000);
  await newsDrained(gw.mesh.db, gw.mesh.bus.jsm, env.controller);
  const counts = await heartbeatsOf(gw.mesh.db, `${prefix}-`);
  expect(Object.keys(counts)).toHaveLength(n);
  expect(Object.entries(counts).filter(([, beats]) => beats !== 1)).toEqual([]);
};

test('rendezvous hashing gives each of two replicas about half the partitions, and a third takes only from both', () => {
  const two = partitionOwners(['replica-a', 'replica-b']);
  const share = (owners: string[], replica: string) => owners.filter((o) => o === replica).length;
  expect(share(two, 'replica-a') + share(two, 'replica-b')).toBe(NEWS_PARTITIONS);
  expect(share(two, 'replica-a')).toBeGreaterThan(NEWS_PARTITIONS / 4);
  expect(share(two, 'replica-b')).toBeGreaterThan(NEWS_PARTITIONS / 4);
  const three = partitionOwners(['replica-c', 'replica-b', 'replica-a']);
  // Whatever moved moved to the newcomer: nothing changed hands between the two that stayed.
  expect(three.every((owner, p) => owner === 'replica-c' || owner === two[p])).toBe(true);
  expect(partitionOf(`${root()}.news.machine.m-1`)).toBe(partitionOf(`${root()}.news.machine.m-1`));
});

test('one replica writes every partition; with a second, each writes its own share and every beat is written once', async () => {
  await eventually(() => gw.news.partitions().length === NEWS_PARTITIONS, 'the only replica writing every partition');
  const second: TestGateway = await startTestGateway(env.env);
  try {
    await eventually(
      () => gw.news.partitions().length + second.news.partitions().length === NEWS_PARTITIONS && second.news.partitions().length > NEWS_PARTITIONS / 4,
      'the second replica taking its share, the first giving it up',
      10_000,
    );
    expect(gw.news.partitions().filter((p) => second.news.partitions().includes(p))).toEqual([]);
    // Each replica's share on its /metrics, as an operator sees it.
    const share = async (g: TestGateway) =>
      Number(/^mesh_news_partitions\S* (\S+)$/m.exec(await (await fetch(`${g.url.replace(/\/graphql$/, '')}/metrics`)).text())?.[1]);
    expect((await share(gw)) + (await share(second))).toBe(NEWS_PARTITIONS);
    expect(await share(second)).toBe(second.news.partitions().length);
    const before = { first: gw.news.stats.ingested, second: second.news.stats.ingested };
    beat('shared', 400);
    await everyOnce('shared', 400);
    const wrote = { first: gw.news.stats.ingested - before.first, second: second.news.stats.ingested - before.second };
    expect(wrote.first + wrote.second).toBe(400);
    expect(wrote.first).toBeGreaterThan(100);
    expect(wrote.second).toBeGreaterThan(100);
  } finally {
    await second.stop();
  }
  // Stopped, the second gave its share up at once: the first writes everything again, within a second or so, not a lease's time.
  await eventually(() => gw.news.partitions().length === NEWS_PARTITIONS, 'the first replica writing every partition again', 3_000);
  beat('after', 200);
  await everyOnce('after', 200);
});

test('a replica frozen past its lease has its partitions taken and written once; woken, it writes none of them twice and gets its share back; killed, its share is taken', async () => {
  const child = await spawnGateway({ ...env.env, LOG_LEVEL: 'info' });
  const ownedBy = async (replica: string) => (await gw.mesh.db.selectFrom('news_partition').select('partition').where('owner', '=', replica).execute()).length;
  try {
    await eventually(async () => (await ownedBy(child.replica)) > NEWS_PARTITIONS / 4, 'the child replica taking its share', 15_000);
    beat('before', 200);
    await everyOnce('before', 200);

    process.kill(child.pid, 'SIGSTOP');
    beat('frozen', 300);
    // Its lease lapses (LEASE_TTL_MS) and the first replica takes its share, from where it was written.
    await eventually(() => gw.news.partitions().length === NEWS_PARTITIONS, 'the live replica taking the frozen one’s partitions', 10_000);
    await everyOnce('frozen', 300);

    process.kill(child.pid, 'SIGCONT');
    await eventually(async () => (await ownedBy(child.replica)) > NEWS_PARTITIONS / 4, 'the woken replica getting its share back', 15_000);
    beat('woken', 300);
    await everyOnce('woken', 300);
    // The woken replica wrote none of what it had read before freezing a second time.
    expect(Object.values(await heartbeatsOf(gw.mesh.db, 'frozen-')).filter((n) => n !== 1)).toEqual([]);

    await child.kill('SIGKILL');
    beat('killed', 300);
    await eventually(() => gw.news.partitions().length === NEWS_PARTITIONS, 'the live replica taking the killed one’s partitions', 10_000);
    await everyOnce('killed', 300);
  } finally {
    await child.kill('SIGKILL').catch(() => undefined);
  }
}, 90_000);

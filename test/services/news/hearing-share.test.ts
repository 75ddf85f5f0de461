import { headers } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { hearingShareSubject } from '../../../src/services/news/hearing-share.js';
import { NEWS_PARTITIONS } from '../../../src/services/news/partitions.js';
import { spawnGateway } from '../../fixtures/child.js';
import { useGateway } from '../../fixtures/gateway.js';
import { anAgent, eventually } from '../../fixtures/live.js';
import { startTestGateway, type TestGateway } from '../../fixtures/services.js';

// Issue 37: each replica judges its partitions of the news and sends the others their beats, so
// two replicas each parse about half the news and both know every machine's last beat; a replica
// frozen, killed or silent on the share has its partitions judged by the other, with no beat missed.
const { gw, env } = useGateway('hearing-share', { env: { MESH_HEARTBEAT_S: '1' } });
let agent: Awaited<ReturnType<typeof anAgent>>;

beforeAll(async () => {
  agent = await anAgent();
});
afterAll(async () => {
  await agent?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const machines = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
const beat = (names: readonly string[]) => {
  for (const name of names) agent.heartbeat(env.subjects, name, { site: 'eu-1', modules: ['broker'] });
};
/** Whether `g` holds a beat of each of `names` heard at or after `sinceMs`. */
const heardSince = (g: Pick<TestGateway, 'mesh'>, names: readonly string[], sinceMs: number) =>
  names.every((name) => (g.mesh.hearing.machines.lastMs(name) ?? 0) >= sinceMs);

test('two replicas each judge about half the partitions, and each knows every machine’s last beat', async () => {
  await eventually(() => gw.mesh.hearing.judged().length === NEWS_PARTITIONS, 'the only replica judging every partition');
  // Alone, it sends nobody its beats.
  const alone = machines('alone', 50);
  const aloneSince = Date.now() - 5;
  beat(alone);
  await eventually(() => heardSince(gw, alone, aloneSince), 'the lone replica hearing its beats');
  await sleep(600);
  expect(gw.mesh.hearing.shared().sent).toBe(0);
  const second = await startTestGateway(env.env);
  try {
    const judged = () => [gw.mesh.hearing.judged(), second.mesh.hearing.judged()] as const;
    await eventually(
      () => {
        const [first, other] = judged();
        return first.length + other.length === NEWS_PARTITIONS && first.length > NEWS_PARTITIONS / 4 && other.length > NEWS_PARTITIONS / 4;
      },
      'each replica judging its own half, the first leaving the second its share',
      10_000,
    );
    const [first, other] = judged();
    expect(first.filter((p) => other.includes(p))).toEqual([]);
    const before = { first: gw.mesh.hearing.shared(), second: second.mesh.hearing.shared() };
    const names = machines('shared', 400);
    const since = Date.now() - 5;
    beat(names);
    await eventually(() => heardSince(gw, names, since) && heardSince(second, names, since), 'both replicas knowing every machine’s beat', 10_000);
    // Each sent the other the beats it judged: about half each, every one once.
    const sent = { first: gw.mesh.hearing.shared().sent - before.first.sent, second: second.mesh.hearing.shared().sent - before.second.sent };
    expect(sent.first + sent.second).toBe(400);
    expect(sent.first).toBeGreaterThan(100);
    expect(sent.second).toBeGreaterThan(100);
    expect(second.mesh.hearing.shared().taken - before.second.taken).toBe(sent.first);
    // The judged share on /metrics, as an operator sees it.
    const metrics = await (await fetch(`${second.url.replace(/\/graphql$/, '')}/metrics`)).text();
    expect(Number(/^mesh_hearing_partitions_judged\S* (\S+)$/m.exec(metrics)?.[1])).toBe(second.mesh.hearing.judged().length);
  } finally {
    await second.stop();
  }
  // Gone, its partitions are judged here again.
  await eventually(() => gw.mesh.hearing.judged().length === NEWS_PARTITIONS, 'the first replica judging every partition again', 5_000);
}, 60_000);

test('a replica frozen has its partitions judged by the other within seconds, no beat missed and no machine that kept beating shown LATE; killed, the same', async () => {
  const child = await spawnGateway({ ...env.env, LOG_LEVEL: 'info' });
  try {
    await eventually(() => gw.mesh.hearing.judged().length < (NEWS_PARTITIONS * 3) / 4, 'the child replica taking its share of the judging', 20_000);
    const names = machines('steady', 200);
    let beating = true;
    const beats = (async () => {
      while (beating) {
        beat(names);
        await sleep(300);
      }
    })();
    const lateSeen = new Set<string>();
    const watch = setInterval(() => {
      for (const m of gw.mesh.status.current()?.machines ?? []) if (m.name.startsWith('steady-') && m.state !== 'UP') lateSeen.add(m.name);
    }, 100);
    try {
      await eventually(() => heardSince(gw, names, Date.now() - 1_000), 'every steady machine heard before the freeze', 10_000);
      process.kill(child.pid, 'SIGSTOP');
      await eventually(() => gw.mesh.hearing.judged().length === NEWS_PARTITIONS, 'the live replica judging the frozen one’s partitions', 10_000);
      // Every beat since is heard here, and states are judged past the freeze: the mesh is not shown as it was.
      await eventually(() => gw.mesh.hearing.current().heardUntilMs > Date.now() - 2_000, 'states judged at a recent instant again', 5_000);
      expect(heardSince(gw, names, Date.now() - 1_500)).toBe(true);

      process.kill(child.pid, 'SIGCONT');
      await eventually(() => gw.mesh.hearing.judged().length < (NEWS_PARTITIONS * 3) / 4, 'the woken replica judging its share again', 20_000);
      await sleep(2_000);
      expect(heardSince(gw, names, Date.now() - 1_500)).toBe(true);

      await child.kill('SIGKILL');
      await eventually(() => gw.mesh.hearing.judged().length === NEWS_PARTITIONS, 'the live replica judging the killed one’s partitions', 10_000);
      await eventually(() => gw.mesh.hearing.current().heardUntilMs > Date.now() - 2_000, 'states judged at a recent instant after the kill', 5_000);
      await sleep(1_000);
      expect(heardSince(gw, names, Date.now() - 1_500)).toBe(true);
    } finally {
      clearInterval(watch);
      beating = false;
      await beats;
    }
    expect([...lateSeen]).toEqual([]);
  } finally {
    await child.kill('SIGKILL').catch(() => undefined);
  }
}, 120_000);

test('a replica whose lease stays alive but whose shares stop has its partitions judged here once they are uncovered too long', async () => {
  const child = await spawnGateway({ ...env.env, LOG_LEVEL: 'info' });
  try {
    await eventually(() => gw.mesh.hearing.judged().length < (NEWS_PARTITIONS * 3) / 4, 'the child replica taking its share of the judging', 20_000);
    process.kill(child.pid, 'SIGSTOP');
    // Its lease kept alive for it: only its silence on the share tells.
    const lease = JSON.stringify({ replica: child.replica, expiresAt: new Date(Date.now() + 60_000).toISOString(), startedAt: new Date().toISOString() });
    await gw.mesh.buckets.leases.put(`replica.${child.replica}`, lease);
    const names = machines('mute', 100);
    const since = Date.now();
    beat(names);
    await eventually(() => gw.mesh.hearing.judged().length === NEWS_PARTITIONS, 'the live replica judging the mute one’s partitions', 10_000);
    expect(gw.mesh.leases.liveReplicas()).toContain(child.replica);
    await eventually(() => heardSince(gw, names, since), 'every beat sent since heard here', 5_000);
  } finally {
    await child.kill('SIGKILL').catch(() => undefined);
  }
}, 60_000);

test('a share not sealed with the replica key is refused: a machine it names is not heard', async () => {
  const refusedBefore = gw.mesh.hearing.shared().refused;
  const forged = {
    replica: 'replica-forger',
    to: { seq: Number.MAX_SAFE_INTEGER, ms: Date.now() + 3_600_000 },
    parts: Array.from({ length: NEWS_PARTITIONS }, (_, p) => [p, 0]),
    beats: ['forged-1', Date.now(), 0],
  };
  const h = headers();
  h.set('Mesh-Key', '1');
  h.set('Mesh-Seal', Buffer.from('not a mac').toString('base64url'));
  agent.nc.publish(hearingShareSubject(env.subjects), JSON.stringify(forged), { headers: h });
  agent.nc.publish(hearingShareSubject(env.subjects), JSON.stringify(forged));
  await eventually(() => gw.mesh.hearing.shared().refused >= refusedBefore + 2, 'both shares refused');
  expect(gw.mesh.hearing.machines.lastMs('forged-1')).toBeUndefined();
  expect(gw.mesh.hearing.current().heardUntilMs).toBeLessThan(Date.now() + 1_000);
});

import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { newsStreamName } from '../../../src/bus/news-stream.js';
import { useGateway } from '../../fixtures/gateway.js';
import { anAgent, eventually } from '../../fixtures/live.js';
import { useNatsServer } from '../../fixtures/nats-server.js';
import { heartbeatsOf as storedHeartbeats } from '../../fixtures/news.js';

// A nats-server of this file's own (JetStream on a spare port), killed and started again mid-stream;
// the shared one is never touched. Its store dir survives the restart, as a server's disk does.
const nats = useNatsServer();
const { gw, env } = useGateway('natsrestart', { env: () => ({ NATS_URL: nats.url }) });
let agent: Awaited<ReturnType<typeof anAgent>>;
beforeAll(async () => {
  agent = await anAgent(nats.url);
});
afterAll(async () => {
  await agent?.close().catch(() => undefined);
});

const heartbeatsOf = (prefix: string) => storedHeartbeats(gw.mesh.db, prefix);

/** The heartbeats the news stream holds for each machine whose name starts with `prefix`, by the stream's own count per subject. */
async function keptInStream(prefix: string): Promise<Record<string, number>> {
  const jsm = await jetstreamManager(agent.nc);
  const info = await jsm.streams.info(newsStreamName(env.controller), { subjects_filter: `${env.subjects}.news.machine.*` });
  const perMachine = Object.entries(info.state.subjects ?? {}).map(([subject, n]) => [subject.split('.').pop()!, n] as const);
  return Object.fromEntries(perMachine.filter(([machine]) => machine.startsWith(prefix)));
}

// What a SIGKILL of the server loses is the agent's, not the stream's: nats.js keeps what is
// published while its connection is down in a buffer it empties at each redial (`prepare()` resets
// the outbound buffer), so the rounds published between the kill and the reconnect never reach the
// server (one round when quiet, two under the whole suite's load, measured). Every round the server
// answered before the kill, and every round published after the reconnect, must be kept; what the
// gateway owes is every heartbeat the stream kept.
test(
  'NATS killed and started again while news flows: every heartbeat the stream kept is stored, and it kept every round sent outside the outage',
  async () => {
    const MACHINES = 20;
    const BEATS = 30;
    let killedAt = Number.POSITIVE_INFINITY;
    let reconnectedAt = Number.POSITIVE_INFINITY;
    (async () => {
      for await (const status of agent.nc.status()) if (status.type === 'reconnect') reconnectedAt = Math.min(reconnectedAt, Date.now());
    })().catch(() => undefined);
    let restarted: Promise<void> | undefined;
    let outsideOutage = 0;
    for (let beat = 0; beat < BEATS; beat++) {
      const sentAfterReconnect = Date.now() > reconnectedAt;
      for (let m = 0; m < MACHINES; m++) agent.heartbeat(env.subjects, `r-${m}`, { modules: ['broker'] });
      await agent.nc.flush().catch(() => undefined); // while the server is down this waits for the redial
      if (sentAfterReconnect || Date.now() < killedAt) outsideOutage++;
      if (beat === BEATS / 2) {
        killedAt = Date.now();
        restarted = nats.restart({ downMs: 500 });
      }
      await new Promise((r) => setTimeout(r, 30));
    }
    await restarted;
    await agent.nc.flush();
    const kept = await keptInStream('r-');
    expect(Object.keys(kept)).toHaveLength(MACHINES);
    expect(outsideOutage).toBeGreaterThan(BEATS / 2);
    expect(Math.min(...Object.values(kept)), JSON.stringify(kept)).toBeGreaterThanOrEqual(outsideOutage);
    // News the server kept is read by the ingest once NATS is back, from where its partitions are written.
    let stored: Record<string, number> = {};
    const storedEveryKept = () => Object.entries(kept).every(([machine, n]) => (stored[machine] ?? 0) >= n);
    await eventually(
      async () => {
        stored = await heartbeatsOf('r-');
        return storedEveryKept();
      },
      'every heartbeat the stream kept stored',
      3_000 + 20_000,
      250,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; kept ${JSON.stringify(kept)}, stored ${JSON.stringify(stored)}`);
    });
    expect(storedEveryKept()).toBe(true);
  },
  3_000 + 60_000,
);

test('after NATS restarts, this replica hears the news again: its watermark comes back to the clock, not further behind every second', async () => {
  const restarted = nats.restart({ downMs: 500 });
  await restarted;
  // Beats after the restart, for the follower of the news stream to read.
  for (let beat = 0; beat < 10; beat++) {
    agent.heartbeat(env.subjects, 'after-restart', { modules: ['broker'] });
    await agent.nc.flush().catch(() => undefined);
    await new Promise((r) => setTimeout(r, 300));
  }
  await eventually(
    async () => (await gw.mesh.hearing.refresh()).heardUntilMs > Date.now() - 3_000 && gw.mesh.hearing.machines.lastMs('after-restart') !== undefined,
    'the watermark within 3 s of the clock and the beats after the restart heard',
    30_000,
    250,
  ).catch((error: Error) => {
    throw new Error(
      `${error.message}; heard until ${new Date(gw.mesh.hearing.current().heardUntilMs).toISOString()}, lag ${gw.mesh.hearing.lagMs()} ms, pending ${gw.mesh.hearing.current().pending}`,
    );
  });
  // Still so 5 s later: a follower that stopped would fall one more second behind each second.
  await new Promise((r) => setTimeout(r, 5_000));
  agent.heartbeat(env.subjects, 'after-restart', { modules: ['broker'] });
  await agent.nc.flush();
  await eventually(async () => (await gw.mesh.hearing.refresh()).heardUntilMs > Date.now() - 3_000, 'the watermark still within 3 s of the clock', 10_000, 250);
}, 90_000);

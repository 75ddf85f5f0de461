import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { NEWS_ACK_WAIT_MS, newsStreamName } from '../../../src/bus/news-stream.js';
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

// NATS 2.9 writes what its stream took to its files a few milliseconds later (its flusher), so a
// SIGKILL takes the last instant's news with it: after the restart the stream held 29 of each
// machine's 30 heartbeats, and the gateway had all 30 only when it had read the lost round before
// the kill (under the whole suite's load it once had not: 29 stored, the test failed for NATS's
// reason). What the gateway owes is every heartbeat the stream kept; that the stream lost no more
// than the round of the kill's instant is checked too, so a restart that lost more still fails.
test(
  'NATS killed and started again while news flows: every heartbeat the stream kept is stored, and it lost at most the kill’s instant',
  async () => {
    const MACHINES = 20;
    const BEATS = 30;
    let restarted: Promise<void> | undefined;
    for (let beat = 0; beat < BEATS; beat++) {
      for (let m = 0; m < MACHINES; m++) agent.heartbeat(env.subjects, `r-${m}`, { modules: ['broker'] });
      await agent.nc.flush().catch(() => undefined); // while the server is down the client buffers
      if (beat === BEATS / 2) restarted = nats.restart({ downMs: 500 });
      await new Promise((r) => setTimeout(r, 30));
    }
    await restarted;
    await agent.nc.flush();
    const kept = await keptInStream('r-');
    expect(Object.keys(kept)).toHaveLength(MACHINES);
    expect(Math.min(...Object.values(kept)), JSON.stringify(kept)).toBeGreaterThanOrEqual(BEATS - 1);
    // News delivered to the gateway just as the server died comes again after NEWS_ACK_WAIT_MS at most.
    let stored: Record<string, number> = {};
    const storedEveryKept = () => Object.entries(kept).every(([machine, n]) => (stored[machine] ?? 0) >= n);
    await eventually(
      async () => {
        stored = await heartbeatsOf('r-');
        return storedEveryKept();
      },
      'every heartbeat the stream kept stored',
      NEWS_ACK_WAIT_MS + 20_000,
      250,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; kept ${JSON.stringify(kept)}, stored ${JSON.stringify(stored)}`);
    });
    expect(storedEveryKept()).toBe(true);
  },
  NEWS_ACK_WAIT_MS + 60_000,
);

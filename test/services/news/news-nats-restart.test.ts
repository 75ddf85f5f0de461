import { afterAll, beforeAll, expect, test } from 'vitest';
import { NEWS_ACK_WAIT_MS } from '../../../src/bus/news-stream.js';
import { useGateway } from '../../fixtures/gateway.js';
import { anAgent, eventually } from '../../fixtures/live.js';
import { type NatsServer, startNatsServer } from '../../fixtures/nats-server.js';
import { heartbeatsOf as storedHeartbeats } from '../../fixtures/news.js';

// A nats-server of this file's own (JetStream on a spare port), killed and started again mid-stream;
// the shared one is never touched. Its store dir survives the restart, as a server's disk does.
let nats: NatsServer;
beforeAll(async () => {
  nats = await startNatsServer();
}, 60_000);
afterAll(async () => {
  await nats?.stop();
});
const { gw, env } = useGateway('natsrestart', { env: () => ({ NATS_URL: nats.url }) });
let agent: Awaited<ReturnType<typeof anAgent>>;
beforeAll(async () => {
  agent = await anAgent(nats.url);
});
afterAll(async () => {
  await agent?.close().catch(() => undefined);
});

const heartbeatsOf = (prefix: string) => storedHeartbeats(gw.mesh.db, prefix);

test(
  'NATS killed and started again while news flows: every heartbeat is stored',
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
    // News delivered to the gateway just as the server died comes again after NEWS_ACK_WAIT_MS at most.
    const stored = await eventually(
      async () => {
        const got = await heartbeatsOf('r-');
        return Object.keys(got).length === MACHINES && Object.values(got).every((n) => n >= BEATS) ? got : undefined;
      },
      'every heartbeat stored',
      NEWS_ACK_WAIT_MS + 20_000,
      250,
    );
    expect(Object.values(stored).every((n) => n >= BEATS)).toBe(true);
  },
  NEWS_ACK_WAIT_MS + 60_000,
);

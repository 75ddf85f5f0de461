import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { newsStreamName } from '../../src/bus/news-stream.js';
import { useGateway } from '../fixtures/gateway.js';
import { anAgent, eventually, type Received, wsSubscribe } from '../fixtures/live.js';
import { useNatsServer } from '../fixtures/nats-server.js';
import { heartbeatsOf as storedHeartbeats } from '../fixtures/news.js';

// A nats-server of this file's own (JetStream on a spare port), killed and started again while 50
// graphql-ws subscribers follow the status and agents send heartbeats; the shared one is never touched.
const SUBSCRIBERS = 50;
const MACHINES = 10;
const BEAT_EVERY_MS = 50;
/** How long after NATS is back every subscriber must have a newer composition. */
const RESUME_WITHIN_MS = 15_000;

const nats = useNatsServer();
const { gw, env } = useGateway('natssubs', { env: () => ({ NATS_URL: nats.url }) });
let agent: Awaited<ReturnType<typeof anAgent>>;
const subscribers: Received<{ status: { seq: number } }>[] = [];

beforeAll(async () => {
  agent = await anAgent(nats.url);
});
afterAll(async () => {
  for (const subscriber of subscribers) subscriber.close();
  await agent?.close().catch(() => undefined);
});

const heartbeatsOf = (prefix: string) => storedHeartbeats(gw.mesh.db, prefix);

const newestSeq = (subscriber: Received<{ status: { seq: number } }>) => Math.max(-1, ...subscriber.items.map((item) => item.status.seq));

test(
  'NATS restarted under 50 status subscribers and heartbeats: every subscriber gets a newer composition, every heartbeat the server confirmed is stored',
  async () => {
    for (let s = 0; s < SUBSCRIBERS; s++) subscribers.push(wsSubscribe(gw.url, 'subscription { status { seq } }'));
    await Promise.all(subscribers.map((subscriber) => subscriber.atLeast(1)));

    // A heartbeat is a core NATS publish, at most once from the agent to the server: a round of
    // heartbeats written just as the server is killed may never reach it. The agent knows which
    // rounds the server confirmed (its flush answered); those must all be stored.
    const confirmed: Record<string, number> = {};
    const rounds = { confirmed: 0, unconfirmed: 0 };
    let beating = true;
    const beats = (async () => {
      while (beating) {
        for (let m = 0; m < MACHINES; m++) agent.heartbeat(env.subjects, `ns-${m}`, { modules: ['broker'] });
        // While the server is down the client buffers, and the flush fails or waits for it.
        const heard = await agent.nc.flush().then(
          () => true,
          () => false,
        );
        rounds[heard ? 'confirmed' : 'unconfirmed']++;
        if (heard) for (let m = 0; m < MACHINES; m++) confirmed[`ns-${m}`] = (confirmed[`ns-${m}`] ?? 0) + 1;
        await new Promise((r) => setTimeout(r, BEAT_EVERY_MS));
      }
    })();

    // The heartbeats are composed and reach every subscriber before the restart.
    const first = Math.max(...subscribers.map(newestSeq));
    await eventually(() => subscribers.every((s) => newestSeq(s) > first), 'every subscriber to follow the heartbeats', 10_000, 50);

    const before = Math.max(gw.mesh.status.current()?.seq ?? -1, ...subscribers.map(newestSeq));
    const confirmedAtRestart = rounds.confirmed;
    await nats.restart({ downMs: 500 });
    const backAt = Date.now();
    const behind = () => subscribers.filter((s) => newestSeq(s) <= before).length;
    await eventually(() => behind() === 0, `every subscriber to get a composition newer than ${before} (${behind()} behind)`, RESUME_WITHIN_MS, 50);
    console.log(`nats-restart: ${SUBSCRIBERS} subscribers past seq ${before} ${Date.now() - backAt} ms after NATS was back`);

    // Heartbeats flow again once the agent is back too, and those are stored as well.
    await eventually(() => rounds.confirmed >= confirmedAtRestart + 5, 'the agent to send heartbeats again', RESUME_WITHIN_MS, 50);
    beating = false;
    await beats;
    await agent.nc.flush();
    // News the server kept is read by the ingest once NATS is back, from where its partitions are written.
    const total = Object.values(confirmed).reduce((a, b) => a + b, 0);
    const diagnosis = async () => {
      const got = await heartbeatsOf('ns-');
      const jsm = await jetstreamManager(agent.nc);
      const stream = await jsm.streams.info(newsStreamName(env.controller));
      return `confirmed ${total} (rounds ${JSON.stringify(rounds)}), stored ${Object.values(got).reduce((a, b) => a + b, 0)}, in the stream ${stream.state.last_seq}, stats ${JSON.stringify(gw.news.stats)}`;
    };
    const stored = await eventually(
      async () => {
        const got = await heartbeatsOf('ns-');
        if (Object.keys(confirmed).every((name) => (got[name] ?? 0) >= confirmed[name]!)) return got;
        console.log(await diagnosis());
        return undefined;
      },
      'every confirmed heartbeat stored',
      3_000 + 20_000,
      2_000,
    );
    console.log(`nats-restart: heartbeat rounds ${JSON.stringify(rounds)}; ${await diagnosis()}`);
    expect(Object.keys(confirmed)).toHaveLength(MACHINES);
    // At least once (docs/status.md): a heartbeat may be counted twice, never lost.
    for (const name of Object.keys(confirmed)) expect(stored[name]).toBeGreaterThanOrEqual(confirmed[name]!);

    // The gateway is still up and serving, and no subscriber was handed an error.
    expect((await gw.gql('{ __typename }')).data).toEqual({ __typename: 'Query' });
    const { data } = await gw.gql('{ status { seq } }');
    expect(data.status.seq).toBeGreaterThan(before);
    await Promise.all(subscribers.map((subscriber) => subscriber.atLeast(1, 1_000))); // rejects with an error a subscriber was sent
  },
  3_000 + 90_000,
);

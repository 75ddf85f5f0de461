import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { bucketNames, streamOf } from '../../src/bus/buckets.js';
import { newsStreamName } from '../../src/bus/news-stream.js';
import { statusStreamName } from '../../src/bus/status-stream.js';
import { LEASE_REFRESH_MS, LEASE_TTL_MS } from '../../src/services/replicas/leases.js';
import { anActTally, tallyRecordHandAct } from '../fixtures/calls.js';
import { type ChildGateway, spawnGateway } from '../fixtures/child.js';
import { eventually } from '../fixtures/live.js';
import { type NatsCluster, startNatsCluster } from '../fixtures/nats-cluster.js';
import { freshDatabase, uniqueName } from '../fixtures/services.js';

// The longest part of test/bus/cluster.test.ts, in a file of its own so that the two run at once
// (each on a three-node NATS cluster of its own): a node of the cluster and the serving gateway
// killed under load.
const TOOK_LEASE = 'took the serving lease';
const SUBSCRIBERS = 20;
const SENDERS = 4;
/** A sender takes a new caller's name after this many calls: within the share a caller keeps (CALLS_KEPT_PER_CALLER, 100). */
const SENDER_CALLS_MAX = 90;
/**
 * The senders make this many calls in each phase (before the node dies, after it, after the
 * gateway dies), then wait for the next: three phases stay well within the calls the bucket keeps
 * (CALLS_KEPT, 1,000), so every acknowledged call can still be read at the end.
 */
const CALLS_A_PHASE = 120;
/**
 * How long a machine first heard after a kill may take to be composed. A functional bound, not a
 * speed one: after the node's death the news stream elects a leader and each replica follows it
 * again; under the whole suite on Node 22 that once took past 15 s (cause not found).
 */
const NEWS_AGAIN_WAIT_MS = 30_000;
/**
 * The bound: a subscriber hears the status again this soon after a kill. A functional test
 * on a loaded machine cannot hold a speed bound, so the figures are logged, and the test asserts
 * that every subscriber hears again, waiting three times the bound.
 */
const HEARD_AGAIN_MS = 5_000;
const HEARD_AGAIN_WAIT_MS = 3 * HEARD_AGAIN_MS;
const SUBSCRIPTION = 'subscription { status { seq composedAt } }';

/** One graphql-ws status subscriber that, when its socket closes, reconnects to the next gateway of the list. */
interface Subscriber {
  received: { at: number; seq: number; composedAt: number; on: string }[];
  on(): string;
  close(): void;
}

function statusSubscriber(gateways: () => string[], first: number): Subscriber {
  const received: Subscriber['received'] = [];
  let closed = false;
  let socket: WebSocket | undefined;
  let on = '';
  const open = (attempt: number) => {
    if (closed) return;
    const urls = gateways();
    const url = urls[attempt % urls.length]!;
    on = url;
    socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
    const ws = socket;
    ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: {} })));
    ws.on('message', (data: Buffer) => {
      const message = JSON.parse(data.toString('utf8'));
      if (message.type === 'connection_ack') ws.send(JSON.stringify({ id: 's', type: 'subscribe', payload: { query: SUBSCRIPTION } }));
      else if (message.type === 'ping') ws.send(JSON.stringify({ type: 'pong' }));
      else if (message.type === 'next' && message.payload.data?.status) {
        const { seq, composedAt } = message.payload.data.status;
        received.push({ at: Date.now(), seq, composedAt: Date.parse(composedAt), on: url });
      }
    });
    ws.on('error', () => undefined);
    ws.on('close', () => {
      if (!closed) setTimeout(() => open(attempt + 1), 100);
    });
  };
  open(first);
  return {
    received,
    on: () => on,
    close() {
      closed = true;
      socket?.close();
    },
  };
}

/** The NATS server (`host:port`) a child gateway says it is connected to now: the last "NATS connected" line of its log. */
function natsServerOf(gateway: ChildGateway): string | undefined {
  const lines = gateway
    .output()
    .split('\n')
    .filter((l) => l.includes('"NATS connected"'));
  return lines.length ? JSON.parse(lines.at(-1)!).server : undefined;
}

describe('a three-node NATS cluster with MESH_KV_REPLICAS=3, losing a node and a gateway', () => {
  let cluster: NatsCluster;
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let nc: NatsConnection;
  const gateways: ChildGateway[] = [];
  const subscribers: Subscriber[] = [];
  const controller = uniqueName('ctl_node_loss');
  const subjects = uniqueName('mesh_node_loss');
  let env: Record<string, string>;

  beforeAll(async () => {
    [cluster, database] = await Promise.all([startNatsCluster(3), freshDatabase('cluster_node_loss')]);
    env = { DATABASE_URL: database.url, NATS_URL: cluster.url, MESH_KV_REPLICAS: '3', MESH_CONTROLLER: controller, MESH_SUBJECTS: subjects, PORT: '0' };
    nc = await connect({ servers: cluster.url.split(','), maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  }, 60_000);
  afterAll(async () => {
    for (const s of subscribers) s.close();
    for (const g of gateways) await g.kill('SIGKILL');
    await nc?.close();
    await cluster?.stop();
    await database?.drop();
  }, 30_000);

  test('losing the serving gateway’s NATS node, then the serving gateway: nothing acknowledged is lost, nothing stays RUNNING, subscribers hear the status again', async () => {
    const a = await spawnGateway(env);
    gateways.push(a);
    await eventually(() => a.output().includes(TOOK_LEASE), 'the first gateway to take the serving lease', 15_000);
    const b = await spawnGateway(env);
    gateways.push(b);
    const jsm = await jetstreamManager(nc);
    for (const name of [...Object.values(bucketNames(controller)).map(streamOf), newsStreamName(controller)]) {
      expect((await jsm.streams.info(name)).config.num_replicas, name).toBe(3);
    }

    // Load: news from 50 machines, NATS verb calls that write a hand-act each, 20 status subscribers (10 per gateway).
    let loading = true;
    const news = (async () => {
      for (let n = 0; loading; n++) {
        nc.publish(`${subjects}.news.machine.m${n % 50}`, JSON.stringify({ kind: 'heartbeat', site: 'eu-1', modules: ['broker'] }));
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const tally = anActTally();
    const { counts, acknowledged, refusals } = tally;
    // Calls are made phase by phase (CALLS_A_PHASE): senders that stopped at 90 calls each (about 6 s of them) had often
    // stopped before the node died, when moving the stream leaders took long, and then no call was answered again.
    let allowed = CALLS_A_PHASE;
    let made = 0;
    const allowAPhase = () => {
      allowed = made + CALLS_A_PHASE;
    };
    const sender = async (s: number) => {
      // Each sender's caller stays within its kept share (issue 35): every call it has acknowledged must still be read.
      for (let n = 0; loading; n++) {
        if (made >= allowed) {
          n--;
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        made++;
        const why = `sender ${s} call ${n}`;
        await tallyRecordHandAct(
          nc,
          { subjects, controller },
          `cluster-tester-${s}-${Math.floor(n / SENDER_CALLS_MAX)}`,
          { act: 'restarted', target: `m${s}`, why, cause: 'cluster' },
          3_000,
          tally,
        );
        await new Promise((r) => setTimeout(r, 30));
      }
    };
    const senders = Array.from({ length: SENDERS }, (_, s) => sender(s));
    const alive = () => gateways.filter((g) => g.child.exitCode === null && g.child.signalCode === null).map((g) => g.url);
    for (let i = 0; i < SUBSCRIBERS; i++)
      subscribers.push(statusSubscriber(() => [a.url, b.url].filter((u) => alive().includes(u) || alive().length === 0), i % 2));
    await eventually(() => subscribers.every((s) => s.received.length > 0), 'every subscriber to hear a composition', 15_000);
    await eventually(() => counts.acknowledged >= 20, 'calls answered', 15_000);

    /** For each subscriber, how long after `since` it heard a composition composed after `since` (when it did). */
    const heardAfter = (since: number, composedAfter = since) =>
      subscribers.map((s) => s.received.find((r) => r.at > since && r.composedAt > composedAfter)?.at).map((at) => (at === undefined ? undefined : at - since));

    // 1. SIGKILL the NATS node the serving gateway is connected to.
    const server = natsServerOf(a);
    const node = cluster.nodeAt(server ?? '');
    expect(node, `the serving gateway's NATS node (${server})`).toBeDefined();
    // The calls, hand-acts and status streams are led from that node (a leader stepping down hands over to a random peer),
    // so killing it costs them their leader: the election is what the gateway must ride out.
    for (const name of [streamOf(bucketNames(controller).calls), streamOf(bucketNames(controller).handActs), statusStreamName(controller)]) {
      for (let tries = 0; tries < 12 && (await jsm.streams.info(name)).cluster?.leader !== node!.name; tries++) {
        await nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${name}`, '', { timeout: 5_000 }).catch(() => undefined);
        await eventually(async () => (await jsm.streams.info(name).catch(() => undefined))?.cluster?.leader, `a leader for ${name}`, 10_000, 100);
      }
    }
    const ours = [...Object.values(bucketNames(controller)).map(streamOf), newsStreamName(controller), statusStreamName(controller)];
    const leaders = await Promise.all(ours.map(async (name) => (await jsm.streams.info(name)).cluster?.leader));
    const ledThere = leaders.filter((leader) => leader === node!.name).length;
    const callsBefore1 = counts.acknowledged;
    allowAPhase();
    const nodeKilledAt = Date.now();
    await node!.kill();
    await eventually(
      () => heardAfter(nodeKilledAt).every((ms) => ms !== undefined),
      'every subscriber to hear a new composition after the node died',
      HEARD_AGAIN_WAIT_MS,
      50,
    );
    const afterNode = heardAfter(nodeKilledAt) as number[];
    await eventually(() => natsServerOf(a) !== server, 'the serving gateway to fail over to another node', 10_000);
    await eventually(() => counts.acknowledged >= callsBefore1 + 20, 'calls answered again after the node died', 20_000);
    // The news consumer resumed: a machine first heard after the kill is composed.
    const composedOn = async (gateway: ChildGateway, machine: string) => {
      nc.publish(`${subjects}.news.machine.${machine}`, JSON.stringify({ kind: 'heartbeat', site: 'eu-2', modules: ['web'] }));
      const { data } = await gateway.gql<{ status: { machines: { name: string }[] } }>('{ status { machines { name } } }');
      return data?.status.machines.some((m) => m.name === machine);
    };
    await eventually(() => composedOn(a, 'after-node-kill'), 'news heard after the node died to be composed', NEWS_AGAIN_WAIT_MS, 250);
    const seqAtNodeKill = Math.max(...subscribers.flatMap((s) => s.received.filter((r) => r.at <= nodeKilledAt).map((r) => r.seq)));

    // 2. SIGKILL the serving gateway: its subscribers reconnect to the other, which takes the lease. Which one serves
    // is read again: an election longer than the lease (6 s) may have moved the lease to the other one meanwhile.
    const servingNow = () =>
      gateways.filter((g) => {
        const lines = g.output().split('\n');
        return lines.findLast((l) => /"msg":"serving lease (taken|lost)"/.test(l))?.includes('serving lease taken');
      });
    const [serving] = await eventually(() => (servingNow().length === 1 ? servingNow() : undefined), 'exactly one serving gateway', 10_000, 100);
    const survivor = serving === a ? b : a;
    const callsBefore2 = counts.acknowledged;
    const onServing = subscribers.filter((s) => s.on() === serving!.url);
    expect(onServing.length, 'subscribers on the gateway about to be killed').toBeGreaterThan(0);
    allowAPhase();
    const gatewayKilledAt = Date.now();
    await serving!.kill('SIGKILL');
    await eventually(
      () => onServing.every((s) => s.received.some((r) => r.at > gatewayKilledAt && r.on === survivor.url)),
      'the killed gateway’s subscribers to be served by the other',
      HEARD_AGAIN_WAIT_MS,
      50,
    );
    const reconnected = onServing.map((s) => s.received.find((r) => r.at > gatewayKilledAt && r.on === survivor.url)!.at - gatewayKilledAt);
    const tookLine = await eventually(
      () =>
        survivor
          .output()
          .split('\n')
          .find((l) => l.includes(TOOK_LEASE) && JSON.parse(l).time > gatewayKilledAt),
      'the other gateway to take the serving lease',
      LEASE_TTL_MS + 2 * LEASE_REFRESH_MS + 5_000,
      100,
    );
    const tookOverAt = JSON.parse(tookLine).time as number;
    await eventually(
      () => heardAfter(gatewayKilledAt).every((ms) => ms !== undefined),
      'every subscriber to hear a composition by the new serving gateway',
      HEARD_AGAIN_WAIT_MS,
      50,
    );
    const afterTakeover = heardAfter(gatewayKilledAt).map((ms) => gatewayKilledAt + ms! - tookOverAt);
    await eventually(() => counts.acknowledged >= callsBefore2 + 20, 'calls answered by the remaining gateway', 20_000);
    await eventually(
      () => composedOn(survivor, 'after-gateway-kill'),
      'news heard after the serving gateway died to be composed by the other',
      NEWS_AGAIN_WAIT_MS,
      250,
    );
    loading = false;
    await Promise.all([news, ...senders]);

    // 3. The node comes back on its ports and storage and catches up.
    await node!.start();
    await cluster.ready(30_000);
    const running = async () =>
      (await survivor.gql(`{ calls(state: RUNNING, first: 100) { edges { node { id } } } }`)).data?.calls.edges.length as number | undefined;
    await eventually(async () => (await running()) === 0, 'no call left RUNNING', LEASE_TTL_MS + 3 * LEASE_REFRESH_MS + 10_000, 250);

    console.log(
      `cluster: node ${node!.name} killed (the serving gateway's; it led ${ledThere} of the ${ours.length} streams), then the serving gateway (${serving === a ? 'the same' : 'the other, which took the lease during the election'}); requests ${JSON.stringify(counts)}; ` +
        `new composition after the node kill within ${Math.max(...afterNode)} ms; killed gateway's subscribers served by the other within ${Math.max(...reconnected)} ms; ` +
        `lease taken ${tookOverAt - gatewayKilledAt} ms after the kill; compositions within ${Math.max(...afterTakeover)} ms of the takeover (bound ${HEARD_AGAIN_MS} ms)`,
    );
    if (refusals.length) {
      for (const g of gateways)
        console.log(
          g
            .output()
            .split('\n')
            .filter((l) => /"level":(50|60)/.test(l))
            .slice(0, 3)
            .join('\n'),
        );
    }
    expect(refusals).toEqual([]);
    // Every subscriber heard again (waited for above); how soon is the figure logged, against HEARD_AGAIN_MS.

    // The seq only grows: for each subscriber, and past what was heard before the kills.
    for (const s of subscribers) {
      const seqs = s.received.map((r) => r.seq);
      expect(seqs.every((seq, i) => i === 0 || seq >= seqs[i - 1]!)).toBe(true);
      expect(seqs.at(-1)!).toBeGreaterThan(seqAtNodeKill);
    }

    // Every acknowledged call reads OK on the remaining gateway, with its hand-act.
    const missing: string[] = [];
    for (const ack of acknowledged) {
      const { data } = await survivor.gql(`query($id: ID!) { call(id: $id) { state } }`, { id: ack.callId }).catch(() => ({ data: undefined }));
      if (data?.call?.state !== 'OK') missing.push(`${ack.callId}: ${JSON.stringify(data?.call)}`);
    }
    // The survivor lists hand-acts from its view of the bucket, which its watch brings up to date
    // after the node loss: every acknowledged one must be listed, by a listing read again until it is.
    const listed = async () => {
      const acts = new Set<string>();
      let after: string | undefined;
      for (;;) {
        const { data } = await survivor.gql(
          `query($after: String) { handActs(cause: "cluster", first: 500, after: $after) { edges { node { id } } pageInfo { hasNextPage endCursor } } }`,
          { after },
        );
        for (const { node: act } of data.handActs.edges) acts.add(act.id);
        if (!data.handActs.pageInfo.hasNextPage) return acts;
        after = data.handActs.pageInfo.endCursor;
      }
    };
    let acts = await listed();
    for (let i = 0; i < 40 && acknowledged.some((ack) => !acts.has(ack.handActId)); i++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      acts = await listed();
    }
    for (const ack of acknowledged) if (!acts.has(ack.handActId)) missing.push(`hand-act ${ack.handActId} of ${ack.callId}`);
    expect(missing).toEqual([]);

    // Read from the node that came back alone: every entry of each bucket is there and readable.
    const onNode = await connect({ servers: node!.url, ignoreClusterUpdates: true });
    try {
      const kvm = new Kvm(onNode);
      const nodeJsm = await jetstreamManager(onNode);
      for (const bucket of Object.values(bucketNames(controller))) {
        await eventually(
          async () => {
            const info = await nodeJsm.streams.info(streamOf(bucket));
            return (
              info.cluster?.replicas?.every((r) => r.current) &&
              (info.cluster.leader === node!.name || info.cluster.replicas.some((r) => r.name === node!.name))
            );
          },
          `${bucket} to be current on ${node!.name}`,
          20_000,
          250,
        );
        const kv = await kvm.open(bucket);
        // A call whose caller gave up may still be finishing (its writes retried): count what was there before listing.
        const { state } = await nodeJsm.streams.info(streamOf(bucket));
        // A listing just after the node's stream caught up can end a few keys short (seen on Node 22
        // with the previous commit too): every key must be listed, by a listing made again until it is.
        const keys = await eventually(
          async () => {
            const listed: string[] = [];
            for await (const key of await kv.keys()) listed.push(key);
            return listed.length >= (state.num_subjects ?? state.messages) ? listed : undefined;
          },
          `every key of ${bucket} listed on ${node!.name}`,
          20_000,
          500,
        );
        expect(keys.length, bucket).toBeGreaterThanOrEqual(state.num_subjects ?? state.messages);
        const unreadable: string[] = [];
        const wanted = bucket.endsWith('_calls')
          ? acknowledged.map((a) => a.callId)
          : bucket.endsWith('_hand-acts')
            ? acknowledged.map((a) => a.handActId)
            : [];
        const present = new Set(keys);
        for (const key of wanted) if (!present.has(key)) unreadable.push(`${key} (acknowledged, not listed)`);
        for (const key of keys) {
          const entry = await kv.get(key);
          if (entry?.operation === 'PUT') {
            try {
              entry.json();
            } catch {
              unreadable.push(key);
            }
          } else if (!entry) unreadable.push(key);
        }
        expect(unreadable, bucket).toEqual([]);
      }
    } finally {
      await onNode.close();
    }
    expect(counts.acknowledged).toBeGreaterThan(callsBefore2 + 20 - 1);
  }, 150_000);
});

import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bucketNames, ensureBuckets, ReplicasRefused, streamOf } from '../../src/bus/buckets.js';
import { connectBus, freePort } from '../../src/bus/nats.js';
import { ensureNewsStream, newsStreamName } from '../../src/bus/news-stream.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { abandonCall, type Call, failCall, finishCall, startCall, startCallView } from '../../src/services/calls/records.js';
import { eventually } from '../fixtures/live.js';
import { type NatsCluster, startNatsCluster } from '../fixtures/nats-cluster.js';
import { freshDatabase, NATS_URL, startTestGateway, uniqueName } from '../fixtures/services.js';

/** Races of a call's end against a sweep: 281 of 500 went wrong before the end was a compare-and-set. */
const RACES = 200;

describe('NATS_URL and MESH_KV_REPLICAS', () => {
  test('NATS_URL takes a comma-separated list of a cluster’s servers; MESH_KV_REPLICAS defaults to 1', () => {
    const config = loadConfig({ NATS_URL: 'nats://10.0.0.1:4222, 10.0.0.2:4222,tls://nats-3.example.com:4222', MESH_KV_REPLICAS: '3' });
    expect(config.natsUrl).toEqual(['nats://10.0.0.1:4222', '10.0.0.2:4222', 'tls://nats-3.example.com:4222']);
    expect(config.kvReplicas).toBe(3);
    expect(loadConfig({}).kvReplicas).toBe(1);
    expect(loadConfig({}).natsUrl).toBeUndefined();
  });

  test.each([
    ['NATS_URL', 'nats://10.0.0.1:4222,,nats://10.0.0.2:4222', /NATS_URL must list NATS servers.*""/],
    ['NATS_URL', 'http://10.0.0.1:4222', /NATS_URL must list NATS servers.*http:/],
    ['NATS_URL', 'nats://10.0.0.1:4222/path', /NATS_URL must list NATS servers/],
    ['NATS_URL', 'ws://10.0.0.1:8080', /NATS_URL must list NATS servers.*ws:/],
    ['NATS_URL', 'nats://a:4222,nats://a:4222', /NATS_URL lists "nats:\/\/a:4222" twice/],
    ['MESH_KV_REPLICAS', '0', /MESH_KV_REPLICAS must be a number ≥ 1/],
    ['MESH_KV_REPLICAS', '2.5', /MESH_KV_REPLICAS must be a whole number from 1 to 5/],
    ['MESH_KV_REPLICAS', '7', /MESH_KV_REPLICAS must be a whole number from 1 to 5/],
  ])('%s=%s stops the start with a ConfigError naming it', (key, value, message) => {
    expect(() => loadConfig({ [key]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [key]: value })).toThrow(message);
  });

  test('on a single nats-server, MESH_KV_REPLICAS=3 is refused with an error naming MESH_KV_REPLICAS', async () => {
    const nc = await connect({ servers: NATS_URL });
    const controller = uniqueName('ctl_single_r3');
    try {
      const jsm = await jetstreamManager(nc);
      const refused = await ensureBuckets(nc, jsm, controller, undefined, 3).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(ReplicasRefused);
      expect((refused as Error).message).toMatch(
        /^MESH_KV_REPLICAS=3 asks for 3 copies of the stream KV_ctl_single_r3_\w+_calls.*set MESH_KV_REPLICAS to at most/,
      );
    } finally {
      const jsm = await jetstreamManager(nc);
      for (const name of Object.values(bucketNames(controller))) await jsm.streams.delete(streamOf(name)).catch(() => undefined);
      await nc.close();
    }
  });
});

describe('a three-node NATS cluster with MESH_KV_REPLICAS=3', () => {
  let cluster: NatsCluster;
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let nc: NatsConnection;
  const controller = uniqueName('ctl_cluster');
  const subjects = uniqueName('mesh_cluster');
  let env: Record<string, string>;

  beforeAll(async () => {
    [cluster, database] = await Promise.all([startNatsCluster(3), freshDatabase('cluster')]);
    env = { DATABASE_URL: database.url, NATS_URL: cluster.url, MESH_KV_REPLICAS: '3', MESH_CONTROLLER: controller, MESH_SUBJECTS: subjects, PORT: '0' };
    nc = await connect({ servers: cluster.url.split(','), maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  }, 60_000);
  afterAll(async () => {
    await nc?.close();
    await cluster?.stop();
    await database?.drop();
  }, 30_000);

  test('more replicas than nodes stops the start with an error naming MESH_KV_REPLICAS', async () => {
    const refused = await startTestGateway({
      ...env,
      MESH_CONTROLLER: uniqueName('ctl_r5'),
      MESH_SUBJECTS: uniqueName('mesh_r5'),
      MESH_KV_REPLICAS: '5',
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ReplicasRefused);
    expect((refused as Error).message).toMatch(/MESH_KV_REPLICAS=5 asks for 5 copies .*no suitable peers for placement/);
  });

  test('a NATS_URL whose first server is down connects to the next one, and logs the node it is on', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const dead = `nats://127.0.0.1:${await freePort()}`;
    const bus = await connectBus({ natsUrl: [dead, cluster.nodes[1]!.url], controller, dataDir: '.mesh', logger, name: 'cluster-test' });
    try {
      expect(bus.server().url).toBe(cluster.nodes[1]!.url.replace('nats://', ''));
      expect(bus.server().name).toBe(cluster.nodes[1]!.name);
      expect(lines.join('')).toContain('"msg":"NATS connected"');
    } finally {
      await bus.close();
    }
  });

  test('a controller’s buckets and news stream made with one replica are moved to MESH_KV_REPLICAS at the next start', async () => {
    const other = uniqueName('ctl_scale');
    const jsm = await jetstreamManager(nc);
    const streams = [...Object.values(bucketNames(other)).map(streamOf), newsStreamName(other)];
    try {
      await ensureBuckets(nc, jsm, other, undefined, 1);
      await ensureNewsStream(jsm, other, uniqueName('mesh_scale'), undefined, 1);
      for (const name of streams) expect((await jsm.streams.info(name)).config.num_replicas, name).toBe(1);
      const buckets = await ensureBuckets(nc, jsm, other, undefined, 3);
      await buckets.calls.put('kept', '{"across":"the move"}');
      await ensureNewsStream(jsm, other, uniqueName('mesh_scale'), undefined, 3);
      for (const name of streams) expect((await jsm.streams.info(name)).config.num_replicas, name).toBe(3);
      expect((await buckets.calls.get('kept'))?.json()).toEqual({ across: 'the move' });
    } finally {
      for (const name of streams) await jsm.streams.delete(name).catch(() => undefined);
    }
  });

  // NATS 2.9 on a cluster checks a compare-and-set against the messages it has applied, not those
  // in flight: a sweep's ABANDONED (compare-and-set on the RUNNING revision) racing the call's own
  // end landed after it, over an acknowledged OK, in 281 of 500 races measured here.
  test('a call ending while another replica’s sweep marks it ABANDONED ends as it ended, whichever write lands first', async () => {
    const other = uniqueName('ctl_race');
    const jsm = await jetstreamManager(nc);
    const buckets = await ensureBuckets(nc, jsm, other, undefined, 3);
    // Two replicas, each with its own view of the calls bucket.
    const here = { buckets, views: { calls: await startCallView(buckets, jsm) }, config: { replica: 'runner' } };
    const sweeper = { buckets, views: { calls: await startCallView(buckets, jsm) }, config: { replica: 'sweeper' } };
    try {
      const ended = new Map<string, string>();
      for (let i = 0; i < RACES; i++) {
        // A caller of its own for each race: a caller keeps at most CALLS_KEPT_PER_CALLER calls (issue 35).
        const started = await startCall(here, { seat: 'ctl', verb: 'recordHandAct', args: {}, caller: `tester-${i}`, door: 'NATS' });
        const [end] = await Promise.all([
          i % 2 ? finishCall(here, started, { done: i }) : failCall(here, started, { code: 'REFUSED', message: 'no' }),
          abandonCall(sweeper, started.call.id, started.revision, 'its lease lapsed'),
        ]);
        ended.set(end.id, end.state);
      }
      // Read from the stream's leader: a KV get may be answered by a replica that is behind.
      const stored = async (id: string) =>
        (await jsm.streams.getMessage(streamOf(buckets.names.calls), { last_by_subj: `$KV.${buckets.names.calls}.${id}` }))!.json<Call>().state;
      const wrong = async () => {
        const found: string[] = [];
        for (const [id, state] of ended) if ((await stored(id)) !== state) found.push(`${id}: ended ${state}, stored ${await stored(id)}`);
        return found;
      };
      await eventually(async () => (await wrong()).length === 0, 'every call to be stored as it ended', 10_000, 250).catch(() => undefined);
      expect(await wrong()).toEqual([]);
    } finally {
      here.views.calls.stop();
      sweeper.views.calls.stop();
      for (const name of Object.values(bucketNames(other))) await jsm.streams.delete(streamOf(name)).catch(() => undefined);
    }
  });
});

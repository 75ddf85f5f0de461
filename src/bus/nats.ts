import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';

/** Where the gateway looks for NATS when NATS_URL is unset. */
export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';
const PROBE_TIMEOUT_MS = 2_000;

export interface BusOptions {
  /** The servers of NATS_URL (one, or a cluster's); unset: the machine's NATS or a child nats-server. */
  natsUrl: string[] | undefined;
  user?: string;
  password?: string;
  /** The controller's name: its inbox prefix is `_INBOX.<controller>`, the only inbox it is granted. */
  controller: string;
  dataDir: string;
  logger: Logger;
  name?: string;
}

/** The NATS connection and its JetStream handles; `close` also stops a child nats-server. */
export interface Bus {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  /** The servers the client was given, comma-separated (it fails over among them and those the cluster announces). */
  url: string;
  /** The server this connection is on now, as `host:port` with its server_name: it changes when a node dies. */
  server(): { url: string; name: string | undefined };
  /**
   * Whether the server this connection is on asks its clients to authenticate (`auth_required`
   * in the server's INFO, read again at each reconnect). False: anyone who reaches it may publish
   * and subscribe anything, unless the NATS account restricts them.
   */
  authRequired(): boolean;
  close(): Promise<void>;
}

export class BusUnavailable extends Error {
  override name = 'BusUnavailable';
}

async function tryConnect(options: BusOptions, servers: string[], attempts: number) {
  return connect({
    servers,
    user: options.user,
    pass: options.password,
    name: options.name ?? `mesh-gateway ${options.controller}`,
    inboxPrefix: `_INBOX.${options.controller}`,
    timeout: PROBE_TIMEOUT_MS,
    reconnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    // A cluster's servers in the given order would pile every replica onto the first node.
    noRandomize: false,
    waitOnFirstConnect: attempts > 1,
  });
}

/** A port nothing listens on now, on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Starts nats-server with JetStream under `<dataDir>/nats`, on 4222 when free, else a spare port. */
async function startChildServer(options: BusOptions): Promise<{ child: ChildProcess; url: string }> {
  const storeDir = join(options.dataDir, 'nats');
  mkdirSync(storeDir, { recursive: true });
  const port = await freePort();
  const child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir], { stdio: 'ignore' });
  const url = `nats://127.0.0.1:${port}`;
  options.logger.warn({ url, storeDir, pid: child.pid }, 'no NATS at 127.0.0.1:4222: started nats-server as a child');
  return { child, url };
}

/**
 * Connects to NATS as DESIGN.md's table says: NATS_URL when set (failing with its reason); else the
 * machine's NATS on 127.0.0.1:4222; else a child nats-server when one is on PATH; else throws
 * BusUnavailable saying how to get one. Reconnects for ever once connected.
 */
export async function connectBus(options: BusOptions): Promise<Bus> {
  let child: ChildProcess | undefined;
  let nc: NatsConnection;
  let url = options.natsUrl?.join(',') ?? DEFAULT_NATS_URL;
  try {
    nc = await tryConnect(options, options.natsUrl ?? [DEFAULT_NATS_URL], 1);
  } catch (error) {
    if (options.natsUrl) throw new BusUnavailable(`cannot reach NATS at any of ${url}: ${(error as Error).message}`);
    const found = spawnSync('sh', ['-c', 'command -v nats-server'], { encoding: 'utf8' }).stdout.trim();
    if (!found) {
      throw new BusUnavailable(
        `no NATS at ${url} and no nats-server on PATH: install one (apt-get install nats-server) and start it with JetStream (nats-server -js), or set NATS_URL`,
      );
    }
    ({ child, url } = await startChildServer(options));
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        nc = await tryConnect(options, [url], 1);
        break;
      } catch (retry) {
        if (Date.now() > deadline) {
          child.kill();
          throw new BusUnavailable(`started nats-server but could not reach it at ${url}: ${(retry as Error).message}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }
  const server = () => ({ url: nc.getServer(), name: nc.info?.server_name });
  options.logger.info({ server: server().url, serverName: server().name, servers: url }, 'NATS connected');
  (async () => {
    for await (const status of nc.status()) {
      // The server it fails over to is logged, so an operator (and the cluster test) can see which node each replica is on.
      if (status.type === 'disconnect') options.logger.warn({ status: status.type, server: status.server }, 'NATS connection lost: reconnecting');
      else if (status.type === 'reconnect') options.logger.warn({ status: status.type, server: server().url, serverName: server().name }, 'NATS connected');
    }
  })().catch(() => undefined);
  const jsm = await jetstreamManager(nc);
  return {
    nc,
    js: jetstream(nc),
    jsm,
    url,
    server,
    authRequired: () => nc.info?.auth_required === true,
    async close() {
      await nc.drain().catch(() => nc.close());
      if (child) {
        child.kill('SIGTERM');
        await new Promise((resolve) => (child!.exitCode !== null ? resolve(undefined) : child!.once('exit', resolve)));
      }
    },
  };
}

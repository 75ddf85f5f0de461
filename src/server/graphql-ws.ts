import { handleProtocols, makeServer } from 'graphql-ws';
import type { YogaServerInstance } from 'graphql-yoga';
import type { Logger } from 'pino';
import { WebSocket, type WebSocketServer } from 'ws';
import type { Fanout } from '../fanout/engine.js';
import type { GatewayContext } from '../schema/support/context.js';
import type { Access } from '../services/access/tokens.js';
import { type AccessLog, requestIdOf } from './access-log.js';
import type { Guards } from './guards/index.js';
import type { LiveAuth } from './live-doors.js';
import type { PersistedOperations } from './persisted.js';
import { onConnectOf, openSocket } from './ws/connection.js';
import { type Roots, socketRecords, type WsExtra } from './ws/socket.js';
import { onSubscribeOf } from './ws/subscription.js';

/** How often each socket is pinged; one that has not answered the previous ping by then is ended. */
const KEEP_ALIVE_MS = 12_000;

export interface GraphqlWsOptions {
  wss: WebSocketServer;
  yoga: YogaServerInstance<Record<string, unknown>, GatewayContext>;
  access: Access;
  logger: Logger;
  /** Serves the live status subscriptions; without it every subscription is executed per subscriber. */
  fanout?: Fanout;
  keepAliveMs?: number;
  /** One line per connection as it closes. */
  accessLog?: AccessLog;
  /** The counts, expiry and revocation every live door keeps, shared with the HTTP streams (liveAuth). */
  doors: LiveAuth;
  /** The gateway's guards: connection_init meets the caller and live stages, each operation the request and operation stages. */
  guards: Guards;
  /** A hash names a manifest document (the persisted guard judged it): its document is the one run. */
  persisted: PersistedOperations;
}

/**
 * graphql-ws (its `makeServer`, on sockets of `ws`) at the Yoga endpoint, in rooms of their own:
 * the connection (ws/connection.ts: the guards' caller and live stages, close 4403 or 4429), its
 * hold on liveAuth (ws/revocation.ts: closed at expiry and revocation), and each operation
 * (ws/subscription.ts: the guards' request and operation stages, Yoga's envelop, the fan-out).
 */
export function serveGraphqlWs(options: GraphqlWsOptions): { dispose(): Promise<void> } {
  const { wss, fanout, keepAliveMs = KEEP_ALIVE_MS } = options;
  const records = socketRecords();
  wss.on('headers', (headers, request) => {
    const id = requestIdOf(request);
    records.upgradeIds.set(request, id);
    headers.push(`x-request-id: ${id}`);
  });
  const server = makeServer<Record<string, unknown>, WsExtra>({
    execute: (args) => (args.rootValue as Roots).execute(args) as never,
    subscribe: (args) => (args.rootValue as Roots).subscribe(args) as never,
    onConnect: onConnectOf({ ...options, records }),
    onSubscribe: onSubscribeOf({ ...options, records }),
  });
  wss.options.handleProtocols = handleProtocols;
  wss.on('connection', (socket, request) => openSocket({ ...options, records }, server, socket, request));

  // One timer for every socket rather than one per socket: idle subscribers stay small.
  const keepAlive = setInterval(() => {
    for (const socket of wss.clients) {
      if (socket.readyState !== WebSocket.OPEN) continue;
      if (!records.alive.has(socket)) {
        socket.terminate();
        continue;
      }
      records.alive.delete(socket);
      socket.ping();
    }
  }, keepAliveMs);
  keepAlive.unref();

  return {
    async dispose() {
      clearInterval(keepAlive);
      fanout?.close();
      for (const client of wss.clients) client.close(1001, 'the gateway is stopping');
    },
  };
}

import type { IncomingMessage } from 'node:http';
import { CloseCode, type Context as WsContext, type Server as WsServer } from 'graphql-ws';
import type { Logger } from 'pino';
import { WebSocket } from 'ws';
import type { Access } from '../../services/access/tokens.js';
import { type AccessLog, requestIdOf } from '../access-log.js';
import { callerOrNothing } from '../guards/caller.js';
import type { Guards } from '../guards/index.js';
import type { LiveAuth } from '../live-doors.js';
import { holdSocket } from './revocation.js';
import { closeRefused, closeSocket, isClientMessageType, messageTypeOf, reasonOf, type SocketRecords, type WsExtra } from './socket.js';

export interface ConnectionRoom {
  access: Access;
  logger: Logger;
  guards: Guards;
  doors: LiveAuth;
  records: SocketRecords;
  /** One line per connection as it closes. */
  accessLog?: AccessLog;
}

/**
 * graphql-ws' onConnect: `connection_init` must carry a token the guards take (refused: close
 * 4403 with the reason) for a caller within its cap of sockets and streams (refused: 4429); the
 * socket is then held to liveAuth.
 */
export function onConnectOf({ access, logger, guards, doors, records }: ConnectionRoom) {
  return async (ctx: WsContext<Record<string, unknown>, WsExtra>): Promise<boolean> => {
    const authorization = ctx.connectionParams?.Authorization ?? ctx.connectionParams?.authorization;
    const presented = typeof authorization === 'string' ? authorization : undefined;
    let admission: string | undefined;
    try {
      admission = await access.admit(presented);
    } catch (error) {
      admission = error instanceof Error ? error.message : String(error);
    }
    // Closed while its token was verified: its close has run, so it must not be counted now.
    if (ctx.extra.socket.readyState !== WebSocket.OPEN) return false;
    const door = 'graphql-ws connect';
    // 4403, graphql-ws's Forbidden, with the reason (a JWT's: signature, issuer, audience or expiry).
    const refusedCaller = guards.judge('caller', { door, authorization: presented, admission });
    const caller = refusedCaller ? undefined : callerOrNothing(access, presented);
    const refusal = refusedCaller ?? (caller && guards.judge('live', { door, caller }));
    if (refusal || !caller) {
      if (refusal?.guard === 'caps') logger.info({ caller: caller?.name }, `WebSocket refused: ${refusal.message}`);
      closeRefused(
        ctx.extra.socket,
        refusal ?? { guard: 'caller', message: 'the token names no caller', code: 'FORBIDDEN', status: 401, closeCode: CloseCode.Forbidden },
      );
      return false;
    }
    ctx.extra.caller = caller;
    ctx.extra.authorization = presented;
    records.logs.get(ctx.extra.socket)?.caller(caller.name);
    holdSocket(doors, access, records, ctx, caller, presented);
    return true;
  };
}

/**
 * A socket as `ws` opens it: its access line, the per-address cap (refused: 4429), its pongs, its
 * errors, and graphql-ws' protocol on it (a message only a server sends closes it 4400).
 */
export function openSocket(room: ConnectionRoom, server: WsServer<WsExtra>, socket: WebSocket, request: IncomingMessage): void {
  const { logger, guards, doors, records, accessLog } = room;
  const { entered, upgradeIds, alive } = records;
  const socketLogs = records.logs;
  if (accessLog) {
    const line = accessLog.socket(request, upgradeIds.get(request) ?? requestIdOf(request));
    socketLogs.set(socket, line);
    socket.once('close', (code) => line.closed(code));
  }
  const address = request.socket.remoteAddress ?? 'unknown';
  const full = guards.judge('live', { door: 'graphql-ws connect', address });
  if (full) {
    logger.info({ address }, `WebSocket refused: ${full.message}`);
    closeRefused(socket, full);
    return;
  }
  const leaveAddress = doors.enterAddress(address);
  socket.once('close', () => {
    leaveAddress();
    entered.get(socket)?.();
  });
  alive.add(socket);
  socket.on('pong', () => alive.add(socket));
  // `on`, not `once`: a second error with no listener would be thrown out of the socket.
  socket.on('error', (error) => {
    logger.warn({ err: error }, 'a WebSocket failed');
    closeSocket(socket, CloseCode.InternalServerError, reasonOf(error));
  });
  const closed = server.opened(
    {
      protocol: socket.protocol,
      send: (data) =>
        new Promise<void>((resolve, reject) => {
          if (socket.readyState !== WebSocket.OPEN) return resolve();
          socket.send(data, (err) => (err ? reject(err) : resolve()));
        }),
      close: (code, reason) => closeSocket(socket, code, reason),
      onMessage: (cb) =>
        socket.on('message', async (data) => {
          const text = String(data);
          try {
            await cb(text);
          } catch (error) {
            if (!isClientMessageType(text)) {
              logger.warn({ type: messageTypeOf(text)?.slice(0, 100) }, 'a graphql-ws client sent a message type only a server sends: closed 4400');
              return closeSocket(socket, CloseCode.BadRequest, 'a client may send connection_init, ping, pong, subscribe and complete only');
            }
            logger.error({ err: error }, 'handling a graphql-ws message failed');
            closeSocket(socket, CloseCode.InternalServerError, reasonOf(error));
          }
        }),
    },
    { socket, request },
  );
  socket.once('close', (code, reason) => {
    void closed(code, String(reason));
  });
}

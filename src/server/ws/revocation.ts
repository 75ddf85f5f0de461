import { CloseCode, type Context as WsContext } from 'graphql-ws';
import type { Caller } from '../../services/access/caller.js';
import type { Access } from '../../services/access/tokens.js';
import type { LiveAuth } from '../live-doors.js';
import { closeSocket, type SocketRecords, type WsExtra } from './socket.js';

/**
 * Holds an acknowledged socket to liveAuth, as an HTTP stream is: counted for its caller, closed
 * 4403 the instant its JWT expires, or when its token is revoked or loses scopes (a fresh token
 * resumes on a new socket); a token re-read with as many scopes renews the socket's caller.
 */
export function holdSocket(
  doors: LiveAuth,
  access: Access,
  records: SocketRecords,
  ctx: WsContext<Record<string, unknown>, WsExtra>,
  caller: Caller,
  presented: string | undefined,
): void {
  const socket = ctx.extra.socket;
  const entered = records.entered;
  entered.set(
    socket,
    doors.enter({
      kind: 'WebSocket',
      caller,
      authorization: presented,
      expiresAt: access.expiresAt(presented),
      end: (reason) => closeSocket(socket, CloseCode.Forbidden, reason),
      renewed: (next) => {
        ctx.extra.caller = next;
      },
    }),
  );
}

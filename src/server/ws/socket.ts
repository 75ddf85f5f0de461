import type { IncomingMessage } from 'node:http';
import type { ExecutionArgs } from 'graphql';
import type { WebSocket } from 'ws';
import type { Caller } from '../../services/access/caller.js';
import type { AccessLog } from '../access-log.js';
import { CLOSE_REASON_MAX_BYTES, closeReasonOf, cutToCloseReason, type Refusal } from '../guards/refusal.js';

/** What graphql-ws keeps of each socket: the socket, its upgrade, and the caller its connection_init named. */
export type WsExtra = {
  socket: WebSocket;
  request: IncomingMessage;
  caller?: Caller;
  /** The Authorization of its connection_init, judged again whenever the tokens file is re-read. */
  authorization?: string;
};

/** The roots an operation runs with: Yoga's (its envelop) or a fan-out group's. */
export type Roots = { execute(args: ExecutionArgs): unknown; subscribe(args: ExecutionArgs): unknown };

/** What the rooms of the WebSocket server keep per socket and per upgrade, weakly. */
export interface SocketRecords {
  /** Each socket's release from liveAuth's counts, once acknowledged. */
  entered: WeakMap<WebSocket, () => void>;
  /** Each socket's access-log line in the making. */
  logs: WeakMap<WebSocket, ReturnType<AccessLog['socket']>>;
  /** The request id each upgrade was answered with. */
  upgradeIds: WeakMap<IncomingMessage, string>;
  /** Sockets that answered the last ping. */
  alive: WeakSet<WebSocket>;
}

export const socketRecords = (): SocketRecords => ({ entered: new WeakMap(), logs: new WeakMap(), upgradeIds: new WeakMap(), alive: new WeakSet() });

/** Closes `socket` with `code` and `reason` cut to CLOSE_REASON_MAX_BYTES (a caller's name may be 200 characters): never throws. */
export function closeSocket(socket: WebSocket, code?: number, reason = ''): void {
  try {
    socket.close(code, cutToCloseReason(reason));
  } catch {
    socket.terminate();
  }
}

/** Closes `socket` as a refusal of the guards says: 4403 `Forbidden: <why>`, or 4429 over a cap. */
export const closeRefused = (socket: WebSocket, refusal: Refusal): void => closeSocket(socket, refusal.closeCode, closeReasonOf(refusal));

export const reasonOf = (error: unknown) => {
  const reason = error instanceof Error ? error.message : String(error);
  return Buffer.byteLength(reason) <= CLOSE_REASON_MAX_BYTES ? reason : 'Internal server error';
};

/** The message types of graphql-ws' protocol a client may send; graphql-ws throws (a 4500) on a server's own `next`, `error` or `connection_ack`. */
const CLIENT_MESSAGE_TYPES: ReadonlySet<string> = new Set(['connection_init', 'ping', 'pong', 'subscribe', 'complete']);

/** A message's `type`, read only after graphql-ws refused it (never on the path of a good message). */
export function messageTypeOf(text: string): string | undefined {
  try {
    const type = (JSON.parse(text) as { type?: unknown } | null)?.type;
    return typeof type === 'string' ? type : undefined;
  } catch {
    return undefined;
  }
}

export const isClientMessageType = (text: string) => CLIENT_MESSAGE_TYPES.has(messageTypeOf(text) ?? '');

import type { Guard } from './guard.js';
import type { Door } from './refusal.js';
import { CLOSE_TOO_MANY, refused } from './refusal.js';

/** An answer that does not stream holds nothing open. */
const HOLDS_NOTHING = 'an answer that does not stream holds nothing open';

/** The doors a caller holds open: a socket and a stream. */
const LIVE_DOORS: ReadonlySet<Door> = new Set(['SSE', 'multipart', 'graphql-ws connect']);

/**
 * What one caller and one address may hold open, sockets and streams together
 * (MESH_WS_SOCKETS_PER_CALLER, MESH_WS_SOCKETS_PER_ADDRESS): a socket over a cap is closed 4429, a
 * stream answered 429. The address is judged when given, the caller when known.
 */
export const capsGuard: Guard = {
  name: 'caps',
  stage: 'live',
  at: {
    POST: HOLDS_NOTHING,
    GET: HOLDS_NOTHING,
    'status fast path': HOLDS_NOTHING,
    multipart: true,
    SSE: true,
    'graphql-ws connect': true,
    'graphql-ws subscribe': 'its socket was counted at its connection; what it runs is capped by the operations guard',
  },
  judge({ door, address, caller }, env) {
    if (!LIVE_DOORS.has(door)) return undefined;
    const full = (address === undefined ? undefined : env.live.addressFull(address)) ?? (caller === undefined ? undefined : env.live.callerFull(caller.name));
    return full === undefined ? undefined : refused('caps', 429, 'TOO_MANY_REQUESTS', full, { closeCode: CLOSE_TOO_MANY });
  },
};

/** An HTTP request runs one operation. */
const ONE_OPERATION = 'an HTTP request runs one operation';

/** What one socket may run at once (MESH_WS_OPERATIONS_PER_SOCKET): one more is that operation's error, the socket goes on. */
export const operationsGuard: Guard = {
  name: 'operations',
  stage: 'request',
  at: {
    POST: ONE_OPERATION,
    GET: ONE_OPERATION,
    'status fast path': ONE_OPERATION,
    multipart: ONE_OPERATION,
    SSE: ONE_OPERATION,
    'graphql-ws connect': 'connection_init runs no operation',
    'graphql-ws subscribe': true,
  },
  judge: ({ operationsOnSocket }, { subscriptionsPerSocket: most }) =>
    operationsOnSocket === undefined || operationsOnSocket <= most
      ? undefined
      : refused('operations', 429, 'TOO_MANY_REQUESTS', `this socket runs ${most} operations; at most ${most}: complete one first`),
};

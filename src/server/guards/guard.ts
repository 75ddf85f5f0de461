import type { Caller } from '../../services/access/caller.js';
import type { Access } from '../../services/access/tokens.js';
import type { LiveAuth } from '../live-doors.js';
import type { PersistedOperations } from '../persisted.js';
import type { OperationRate } from '../rate-limit.js';
import type { Door, Refusal } from './refusal.js';

/**
 * When a guard judges, in the order a request meets them: its arrival (headers only, before a
 * JWT is verified), its caller, a live door opening (a socket, a stream), the request before its
 * body is read, and the operation once its parameters are read.
 */
export type Stage = 'arrival' | 'caller' | 'live' | 'request' | 'operation';

/** An operation's parameters, as Yoga and graphql-ws read them alike. */
export interface OperationParams {
  query?: string;
  operationName?: string | null;
  variables?: unknown;
  extensions?: Record<string, unknown> | null;
  documentId?: unknown;
}

/** What a door knows of a request, adapted to the guards: each guard reads the facts it judges. */
export interface RequestFacts {
  door: Door;
  method?: string;
  /** The request target (`/graphql?…`). */
  target?: string;
  host?: string;
  origin?: string;
  accept?: string;
  authorization?: string | null;
  /** Why this request's JWT was refused when it was verified (access.admit). */
  admission?: string;
  contentType?: string | null;
  contentLength?: string | null;
  /** Whether it carries graphql-yoga's CSRF prevention header. */
  csrfHeader?: boolean;
  /** The peer's address, for the live doors' per-address cap. */
  address?: string;
  /** The caller, once judged: the live caps, the rate. */
  caller?: Caller;
  params?: OperationParams;
  /** The operations its socket runs, this one among them (graphql-ws). */
  operationsOnSocket?: number;
  /** Judge the rate without spending it (the status fast path spends it as it answers). */
  dryRun?: boolean;
}

/** What the guards judge against: the gateway's settings and its counts. */
export interface GuardEnv {
  access: Access;
  /** An open gateway (no tokens) answers loopback names only. */
  loopbackOnly: boolean;
  /** MESH_CORS_ORIGINS: origins of other sites let open a socket. */
  corsOrigins: readonly string[];
  draining(): boolean;
  rate: OperationRate;
  persisted: PersistedOperations;
  /** The live doors' counts (sockets and streams per caller and per address). */
  live: Pick<LiveAuth, 'addressFull' | 'callerFull'>;
  /** What one socket may run at once (MESH_WS_OPERATIONS_PER_SOCKET). */
  subscriptionsPerSocket: number;
}

/** One check a request meets: request facts in, a refusal or nothing out. */
export interface Guard {
  readonly name: string;
  readonly stage: Stage;
  /** Each door: true where the guard holds, or why it does not apply there. */
  readonly at: Readonly<Record<Door, true | string>>;
  judge(facts: RequestFacts, env: GuardEnv): Refusal | undefined;
}

/** Where a guard holds at every HTTP door; `live` says what of it holds at graphql-ws' doors. */
export const atHttp = (ws: { connect: true | string; subscribe: true | string }): Record<Door, true | string> => ({
  POST: true,
  GET: true,
  'status fast path': true,
  multipart: true,
  SSE: true,
  'graphql-ws connect': ws.connect,
  'graphql-ws subscribe': ws.subscribe,
});

/** Judged at the upgrade: a socket's operations come on a socket that passed it. */
export const JUDGED_AT_UPGRADE = 'judged at the upgrade that opened the socket';

/** The HTTP door a request comes by: a stream it asks for (SSE, `multipart/mixed`), else its method's. */
export function httpDoorOf(method: string | undefined, accept: string | null | undefined): Door {
  if (accept?.includes('text/event-stream')) return 'SSE';
  if (accept?.includes('multipart/mixed')) return 'multipart';
  return method === 'GET' ? 'GET' : 'POST';
}

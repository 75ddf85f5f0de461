import type { IncomingMessage, ServerResponse } from 'node:http';
import { GraphQLError } from 'graphql';

/**
 * The doors a request comes in by. Every guard says, for each, whether it holds there or why it
 * does not (test/server/every-door-every-guard.test.ts walks each door against each guard).
 */
export const DOORS = ['POST', 'GET', 'status fast path', 'multipart', 'SSE', 'graphql-ws connect', 'graphql-ws subscribe'] as const;
export type Door = (typeof DOORS)[number];

/**
 * Why a guard refuses a request, as each door answers it: an HTTP status and a GraphQL error
 * (message and `code`) before or inside Yoga, an upgrade's HTTP status, a socket's close code, or
 * an operation's `error` message on a socket.
 */
export interface Refusal {
  /** The guard that refused, by its name in the list (guards/index.ts). */
  guard: string;
  /** What the client reads, the same at every door. */
  message: string;
  /** The GraphQL error's `extensions.code`. */
  code: string;
  /** The HTTP status of the refusal (an upgrade's too). */
  status: number;
  /** How a connected socket is closed by it: graphql-ws' 4403 (Forbidden) or 4429 (too many). */
  closeCode: number;
  /** Headers of an HTTP answer (Retry-After, WWW-Authenticate). */
  headers?: Record<string, string>;
  /** More of the GraphQL error's extensions (a rate's `retryAfter`). */
  extensions?: Record<string, unknown>;
}

/** graphql-ws' Forbidden, which closes a socket whose caller is refused. */
const CLOSE_FORBIDDEN = 4403;
/** graphql-ws' 4429 (Too many initialisation requests), used for every cap a socket breaks. */
export const CLOSE_TOO_MANY = 4429;

/** A close frame's reason holds 123 bytes at most (RFC 6455); ws throws on a longer one. */
export const CLOSE_REASON_MAX_BYTES = 123;

/** A refusal of `guard`, closed 4403 on a socket unless it says otherwise. */
export function refused(guard: string, status: number, code: string, message: string, more: Partial<Refusal> = {}): Refusal {
  return { guard, message, code, status, closeCode: CLOSE_FORBIDDEN, ...more };
}

/** The refusal as Yoga answers it over HTTP: its `http` extension sets the status and the headers. */
export function asGraphQLError(refusal: Refusal): GraphQLError {
  const http = refusal.headers ? { status: refusal.status, headers: refusal.headers } : { status: refusal.status };
  return new GraphQLError(refusal.message, { extensions: { code: refusal.code, ...refusal.extensions, http } });
}

/** The refusal as an operation's `error` message on a socket, which has no status to set. */
export function asOperationError(refusal: Refusal): GraphQLError {
  return new GraphQLError(refusal.message, { extensions: { code: refusal.code, ...refusal.extensions } });
}

/** The refusal as a socket's close reason: `Forbidden: <why>` for a 4403, within a close frame's 123 bytes. */
export function closeReasonOf(refusal: Refusal): string {
  const reason = refusal.closeCode === CLOSE_FORBIDDEN ? `Forbidden: ${refusal.message}` : refusal.message;
  if (Buffer.byteLength(reason) <= CLOSE_REASON_MAX_BYTES) return reason;
  return refusal.closeCode === CLOSE_FORBIDDEN ? 'Forbidden' : cutToCloseReason(reason);
}

/** `reason` cut to CLOSE_REASON_MAX_BYTES (a caller's name may be 200 characters). */
export function cutToCloseReason(reason: string): string {
  let cut = reason;
  while (Buffer.byteLength(cut) > CLOSE_REASON_MAX_BYTES) cut = cut.slice(0, -1);
  return cut;
}

/** Answers a request refused before Yoga: the status, its headers and a GraphQL error body (none to a HEAD). */
export function answerRefusal(request: IncomingMessage, response: ServerResponse, refusal: Refusal): void {
  const body = JSON.stringify({ errors: [{ message: refusal.message, extensions: { code: refusal.code, ...refusal.extensions } }] });
  response.writeHead(refusal.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...refusal.headers,
  });
  response.end(request.method === 'HEAD' ? undefined : body);
}

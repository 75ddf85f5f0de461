import { STORE_GONE } from './sqlstate.js';

/**
 * The domain's expected failures. Services throw these; the schema turns each into a typed error
 * as data. Anything else thrown is unexpected and masked by the server.
 */
export abstract class DomainError extends Error {
  abstract readonly code: string;
}

/** The thing named does not exist (a seat, a machine, a call, a plan). */
export class NotFound extends DomainError {
  override name = 'NotFound';
  readonly code = 'NOT_FOUND';
  constructor(
    readonly kind: string,
    readonly key: string,
  ) {
    super(`no ${kind} named ${JSON.stringify(key)}`);
  }
}

/** The request contradicts what is stored (a name taken, a state that does not allow it). */
export class Conflict extends DomainError {
  override name = 'Conflict';
  readonly code = 'CONFLICT';
}

/** The request is malformed: a bad name, a blank reason, an argument of the wrong type. */
export class Invalid extends DomainError {
  override name = 'Invalid';
  readonly code = 'INVALID';
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** The caller lacks the scope the request needs. */
export class Forbidden extends DomainError {
  override name = 'Forbidden';
  readonly code = 'FORBIDDEN';
}

/** What cannot be answered yet: no composition heard, a verb this build does not serve, a store or bus that is down. */
export class Unavailable extends DomainError {
  override name = 'Unavailable';
  readonly code = 'UNAVAILABLE';
}

/** What a caller is told while the store cannot be reached. */
export const STORE_UNAVAILABLE_MESSAGE = 'the store is unavailable';

/** The socket's own errors when the server is not there or drops the connection. */
const SOCKET_GONE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTCONN']);
/** node-postgres says so in words, without a code, when a connection ends under it. */
const GONE_MESSAGES = [/connection terminated/i, /not queryable/i, /connection error/i, /server closed the connection/i];

/**
 * Whether an error means the store cannot be reached (stopped, restarting, the network gone), as
 * opposed to a statement it refused: the one classifier the server's masking, call records, the
 * news ingest and the composer use. Looks through `cause` and an AggregateError's `errors`.
 */
export function isStoreUnavailable(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 4) return false;
  if (error instanceof Unavailable) return false; // already said, in the domain's words
  const { code, message, cause, errors } = error as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof code === 'string' && (STORE_GONE.has(code) || SOCKET_GONE_CODES.has(code))) return true;
  if (typeof code !== 'string' && typeof message === 'string' && GONE_MESSAGES.some((m) => m.test(message))) return true;
  if (Array.isArray(errors) && errors.some((e) => isStoreUnavailable(e, depth + 1))) return true;
  return isStoreUnavailable(cause, depth + 1);
}

/** A logger's two levels a background job's failure is told at. */
interface FailureLogger {
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/**
 * Logs a background job's failure (a sweep, a prune) that is tried again later:
 * while the store cannot be reached it is a warning, without a stack, since the outage is told
 * already and nothing is lost; anything else is an error with its stack.
 */
export function logJobFailure(logger: FailureLogger, err: unknown, message: string, fields: object = {}): void {
  if (isStoreUnavailable(err)) logger.warn({ ...fields, err: String(err) }, `${message}: the store is unavailable`);
  else logger.error({ ...fields, err }, message);
}

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

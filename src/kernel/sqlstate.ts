/**
 * The PostgreSQL SQLSTATE codes the gateway reacts to, by what each means to it, and nowhere else:
 * node-postgres (and PGlite) give a statement's SQLSTATE as the error's `code`. In the kernel
 * because the kernel's `isStoreUnavailable` reads them too, and the kernel imports nothing above it.
 */
export const SQLSTATE = {
  /** A unique index violated: a row another transaction made a moment before this one's. */
  uniqueViolation: '23505',
  /** Two transactions waited on each other; PostgreSQL ended one. */
  deadlockDetected: '40P01',
  /** A transaction could not be serialized with another. */
  serializationFailure: '40001',
  /** PostgreSQL ended a session whose transaction was left idle past `idle_in_transaction_session_timeout`. */
  idleInTransactionTimeout: '25P03',
  adminShutdown: '57P01',
  crashShutdown: '57P02',
  /** The server is starting or stopping. */
  cannotConnectNow: '57P03',
  connectionException: '08000',
  connectionDoesNotExist: '08003',
  connectionFailure: '08006',
  clientUnableToEstablishConnection: '08001',
  serverRejectedConnection: '08004',
} as const;

type SqlState = (typeof SQLSTATE)[keyof typeof SQLSTATE];

/** The codes by which one of two transactions that crossed is told it must go: run again, it may pass. */
const TRANSIENT_CONFLICT: ReadonlySet<string> = new Set<SqlState>([SQLSTATE.deadlockDetected, SQLSTATE.serializationFailure]);

/** The codes of a server going away or refusing connections: the store is unavailable, not refusing a statement. */
export const STORE_GONE: ReadonlySet<string> = new Set<SqlState>([
  SQLSTATE.adminShutdown,
  SQLSTATE.crashShutdown,
  SQLSTATE.cannotConnectNow,
  SQLSTATE.connectionException,
  SQLSTATE.connectionDoesNotExist,
  SQLSTATE.connectionFailure,
  SQLSTATE.clientUnableToEstablishConnection,
  SQLSTATE.serverRejectedConnection,
]);

/** An error's SQLSTATE, or undefined when it carries none. */
export const sqlStateOf = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
};

/** Whether `error` is a deadlock or a serialization failure: another transaction crossed this one, and a retry may pass. */
export const isTransientConflict = (error: unknown): boolean => TRANSIENT_CONFLICT.has(sqlStateOf(error) ?? '');

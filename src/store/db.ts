import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { Kysely, type LogEvent, PostgresDialect, sql, type Transaction } from 'kysely';
import pg from 'pg';
import { isStoreUnavailable } from '../kernel/errors.js';
import { isTransientConflict, SQLSTATE, sqlStateOf } from '../kernel/sqlstate.js';
import type { DB } from './tables.js';

export type Store = Kysely<DB>;
/** Any store handle: the database or a transaction open on it. Declared here only, imported by every service. */
export type Db = Kysely<DB> | Transaction<DB>;

/**
 * How long PostgreSQL lets a gateway's transaction wait on the gateway between two statements
 * before it ends the session. Every transaction here is statements only (milliseconds); one left
 * waiting is a replica frozen (SIGSTOP, a suspended VM) in the middle of it, whose row locks would
 * hold every other replica's heartbeat writes, and with them the news watermark, for as long as
 * it stays frozen: a stopped machine is then shown LATE or SILENT that much late (test/mesh/bad-day.test.ts).
 * Ended, its locks go, its partitions are taken by another replica once its lease lapses, and the
 * frozen replica, once it goes on, finds its transaction failed and nothing written.
 */
export const STORE_IDLE_IN_TRANSACTION_MS = 5_000;

/** Whether `error` is a unique index violated: a row another transaction made a moment before this one's. */
export const isUniqueViolation = (error: unknown): boolean => sqlStateOf(error) === SQLSTATE.uniqueViolation;
/**
 * Whether a statement failed because another transaction crossed it (a unique index it filled first,
 * a deadlock, a serialization failure): an outcome of concurrency the caller answers or retries, not
 * a fault of the server. One not handled still reaches the caller as INTERNAL, logged as such.
 */
export const isCrossedByAnother = (error: unknown): boolean => isUniqueViolation(error) || isTransientConflict(error);

export interface StoreOptions {
  /** PostgreSQL through `pg`; unset: embedded PGlite in `<dataDir>/pg`. */
  databaseUrl: string | undefined;
  dataDir: string;
  /** Called once per SQL statement executed; tests count statements with it. */
  onQuery?: (sql: string) => void;
  onError?: (error: unknown, sql: string) => void;
  /**
   * Called when an idle connection of the pool fails (PostgreSQL stopped or restarted under it).
   * Without a listener node-postgres emits an unhandled 'error' event, which ends the process.
   */
  onConnectionError?: (error: unknown) => void;
  /**
   * Called when PostgreSQL ends a transaction of this process left idle past
   * STORE_IDLE_IN_TRANSACTION_MS: this process was frozen, or too starved of CPU to send the next
   * statement. The statement that next uses the connection fails as if the store were gone; this
   * says the store was not.
   */
  onTransactionEndedIdle?: (error: unknown) => void;
}

// Postgres returns bigint and numeric as strings by default; counts and sums here fit a double.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));

/** Statement text a span keeps, at most (a batch insert of news is long). */
const STATEMENT_TEXT_MAX = 2000;

/**
 * A span for one statement run inside a traced piece of work (a GraphQL operation, a verb call,
 * a composition, a news batch), timed by Kysely's own measure as it logs it. Statements outside any
 * (timers, views) make none. A no-op without an OpenTelemetry SDK (src/server/tracing.ts).
 */
function statementSpan(event: LogEvent, system: string): void {
  if (!trace.getActiveSpan()?.isRecording()) return;
  const end = performance.timeOrigin + performance.now();
  const text = event.query.sql;
  const operation = /^\s*\(?\s*(\w+)/.exec(text)?.[1]?.toLowerCase() ?? 'statement';
  const span = trace.getTracer('mesh-gateway').startSpan(operation, {
    kind: SpanKind.CLIENT,
    startTime: end - event.queryDurationMillis,
    attributes: { 'db.system.name': system, 'db.operation.name': operation, 'db.query.text': text.slice(0, STATEMENT_TEXT_MAX) },
  });
  if (event.level === 'error') span.setStatus({ code: SpanStatusCode.ERROR, message: String(event.error) });
  span.end(end);
}

/** Opens the store: PostgreSQL when a URL is given, otherwise embedded PGlite on disk. */
export async function openStore(options: StoreOptions): Promise<Store> {
  const log = (event: LogEvent) => {
    statementSpan(event, options.databaseUrl ? 'postgresql' : 'pglite');
    if (event.level === 'query') options.onQuery?.(event.query.sql);
    else options.onError?.(event.error, event.query.sql);
  };
  if (options.databaseUrl) {
    // JIT off: the holdings query's estimates (a JSON array per assignment) make Postgres spend far
    // longer compiling it (~0.5 s) than running it, on every composition. A transaction left idle
    // past STORE_IDLE_IN_TRANSACTION_MS is ended by PostgreSQL.
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: 10,
      options: `-c jit=off -c idle_in_transaction_session_timeout=${STORE_IDLE_IN_TRANSACTION_MS}`,
    });
    pool.on('error', (error) => options.onConnectionError?.(error));
    // A connection checked out (between two statements of a transaction) has no pool listener: its
    // failure would be unhandled too. The statement that next uses it fails and says so instead,
    // except that it cannot say the transaction was ended idle: that is told here.
    pool.on('connect', (client) =>
      client.on('error', (error) => {
        if (sqlStateOf(error) === SQLSTATE.idleInTransactionTimeout) options.onTransactionEndedIdle?.(error);
      }),
    );
    return new Kysely<DB>({ dialect: new PostgresDialect({ pool }), log });
  }
  const dir = join(options.dataDir, 'pg');
  mkdirSync(dir, { recursive: true });
  const release = lockEmbeddedStore(dir);
  try {
    const { PGlite } = await import('@electric-sql/pglite');
    const { PGliteDialect } = await import('kysely-pglite-dialect');
    const pglite = await PGlite.create(dir);
    const db = new Kysely<DB>({ dialect: new PGliteDialect(pglite), log });
    // The lock goes with the store: released once the store is closed.
    const destroy = db.destroy.bind(db);
    db.destroy = () => destroy().finally(release);
    return db;
  } catch (error) {
    release();
    throw error;
  }
}

/** The first wait for a store that cannot be reached yet; each next wait doubles. */
export const STORE_WAIT_FIRST_MS = 500;
/** Waits for the store stop growing here: a store back after an outage is found within this. */
export const STORE_WAIT_MAX_MS = 10_000;

/**
 * Resolves once the store answers `select 1`. While it cannot be reached (isStoreUnavailable) it
 * waits STORE_WAIT_FIRST_MS, doubling up to STORE_WAIT_MAX_MS, telling `onWait` before each wait;
 * any other error (a wrong password, a database that does not exist) is thrown at once.
 */
export async function waitForStore(db: Store, onWait: (error: unknown, nextDelayMs: number, attempt: number) => void): Promise<void> {
  let delay = STORE_WAIT_FIRST_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      await sql`select 1`.execute(db);
      return;
    } catch (error) {
      if (!isStoreUnavailable(error)) throw error;
      onWait(error, delay, attempt);
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, STORE_WAIT_MAX_MS);
    }
  }
}

/** The embedded store is in use by another live process: two gateways on one PGlite folder would corrupt it. */
class StoreInUse extends Error {
  override name = 'StoreInUse';
}

interface LockHolder {
  pid: number;
  host: string;
  since: string;
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Creates `path` holding `text`, or throws EEXIST when it exists. Written whole to a file of this
 * process's own, then linked into place: a lock created empty and then written (`wx`) could be read
 * by a second gateway starting at that instant as one left half-written by a crash, and taken over.
 */
function takeWhole(path: string, text: string): void {
  const own = `${path}.${process.pid}`;
  writeFileSync(own, text);
  try {
    linkSync(own, path);
  } catch (error) {
    if (!NO_HARD_LINKS.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
    writeFileSync(path, text, { flag: 'wx' });
  } finally {
    rmSync(own, { force: true });
  }
}

/** What a filesystem without hard links (FAT, some network mounts) answers a link with: the lock is then created and written in two steps. */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

/**
 * Takes `<dir>.lock` for this process (PGlite has no lock of its own); a lock left by a process
 * that is gone is taken over. Throws StoreInUse naming the folder and the other process. Returns
 * the release.
 */
function lockEmbeddedStore(dir: string): () => void {
  const path = `${dir}.lock`;
  const mine: LockHolder = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      takeWhole(path, JSON.stringify(mine));
      return () => rmSync(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let holder: LockHolder | undefined;
    try {
      holder = JSON.parse(readFileSync(path, 'utf8')) as LockHolder;
    } catch {
      holder = undefined; // unreadable: left half-written by a crash
    }
    if (holder && holder.host === mine.host && holder.pid !== process.pid && isAlive(holder.pid)) {
      throw new StoreInUse(
        `the embedded store ${dir} is in use by process ${holder.pid} (since ${holder.since}): another mesh-gateway runs in this folder; stop it, or give this one its own MESH_DATA_DIR or a DATABASE_URL`,
      );
    }
    rmSync(path, { force: true }); // its process is gone
  }
  throw new StoreInUse(`could not take the lock ${path} of the embedded store ${dir}`);
}

import { type Kysely, sql, type Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { Buckets } from '../../bus/buckets.js';
import { makeRoomFor } from '../../bus/fair-share.js';
import type { KvView } from '../../bus/kv-view.js';
import { isStoreUnavailable, STORE_UNAVAILABLE_MESSAGE, Unavailable } from '../../kernel/errors.js';
import type { DB } from '../../store/tables.js';
import { type CallSummary, putRelayedCall } from '../calls/records.js';
import { type HandAct, handActsShared } from '../hand-acts/hand-acts.js';
import type { RecordBucket } from '../hand-acts/outbox-write.js';

/**
 * The transactional outbox (migrations/0007_record_outbox.ts): the record an act leaves — its
 * hand-act, its call's end — is inserted in the act's own PostgreSQL transaction, then put in its
 * NATS bucket by whichever replica relays first. An act that committed has its record on disk;
 * NATS being away only delays the put. A put is by the record's id and checks what is there first,
 * so a record relayed twice (a replica killed between its put and its delete) is seen once.
 */

/** A replica's relay looks for rows to relay this often (and at once after each act it commits). */
const RELAY_EVERY_MS = 1_000;
/**
 * A claimed row is this replica's to relay for this long (MESH_OUTBOX_CLAIM_S, config.ts): a replica
 * killed mid-relay frees its rows when it lapses, and another relays them. Longer than one put's
 * time-out (5 s) so a live relay never loses its claim mid-put; were it lost, the other replica's put
 * of the same record finds it there (putHandAct, putRelayedCall) and the record is seen once.
 */
const RELAY_CLAIM_MS = 10_000;
/** Rows claimed at once by one pass of a relay. */
const RELAY_BATCH = 100;
/**
 * An act that committed waits at most this long for its own records' put before it answers: with
 * NATS away it answers its success, and the relay puts them when NATS is back.
 */
const DELIVER_WAIT_MS = 1_500;

/** What relaying needs: the store, the two buckets, this replica's views of them, a logger. */
export interface OutboxMesh {
  db: Kysely<DB>;
  buckets: Pick<Buckets, 'handActs' | 'calls'>;
  views: { handActs: KvView<HandAct>; calls: KvView<CallSummary> };
  /** `outboxClaimSeconds`: MESH_OUTBOX_CLAIM_S (RELAY_CLAIM_MS when absent). */
  config: { replica: string; outboxClaimSeconds?: number };
  logger?: Logger;
}

/**
 * A transaction that services which open their own (`db.transaction().execute`) join: their
 * transaction becomes a savepoint of this one, so the act, and the records written beside it,
 * commit together or not at all, and a service's own retry after a crossed statement still works.
 */
function joinable(trx: Transaction<DB>): Kysely<DB> {
  let depth = 0;
  const nested = {
    setIsolationLevel: () => nested,
    setAccessMode: () => nested,
    execute: async <T>(run: (tx: Kysely<DB>) => Promise<T>): Promise<T> => {
      const name = sql.id(`joined_${++depth}`);
      await sql`savepoint ${name}`.execute(trx);
      try {
        const result = await run(joined);
        await sql`release savepoint ${name}`.execute(trx);
        return result;
      } catch (error) {
        await sql`rollback to savepoint ${name}`.execute(trx).catch(() => undefined);
        throw error;
      } finally {
        depth--;
      }
    },
  };
  const joined: Kysely<DB> = new Proxy(trx, {
    get(target, key) {
      if (key === 'transaction') return () => nested;
      const value = Reflect.get(target, key, target);
      // Kysely's methods read private fields: they run on the transaction itself, not the proxy.
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as unknown as Kysely<DB>;
  return joined;
}

/**
 * Runs an act in one transaction with whatever it writes to the outbox. The store away is said so:
 * Unavailable, never INTERNAL, and nothing was done.
 */
export async function actTogether<T>(db: Kysely<DB>, act: (tx: Kysely<DB>) => Promise<T>): Promise<T> {
  try {
    return await db.transaction().execute((trx) => act(joinable(trx)));
  } catch (error) {
    if (isStoreUnavailable(error)) throw new Unavailable(`${STORE_UNAVAILABLE_MESSAGE}: nothing was done`, { cause: error });
    throw error;
  }
}

interface OutboxRow {
  seq: string;
  bucket: RecordBucket;
  id: string;
  body: string;
}

/** Puts one hand-act by its id, never over another: already there with these bytes counts as done. */
async function putHandAct(mesh: OutboxMesh, row: OutboxRow): Promise<void> {
  const record = JSON.parse(row.body) as HandAct;
  let revision: number;
  try {
    if (!mesh.views.handActs.get(row.id)) await makeRoomFor(handActsShared(mesh), record.actor);
    revision = await mesh.buckets.handActs.create(row.id, row.body);
  } catch (error) {
    const entry = await mesh.buckets.handActs.get(row.id);
    if (entry?.operation !== 'PUT') throw error;
    if (entry.string() !== row.body) mesh.logger?.error({ handActId: row.id }, 'a relayed hand-act found another under its id: the one kept stays');
    revision = entry.revision;
    if (mesh.views.handActs.get(row.id)) return;
  }
  mesh.views.handActs.apply(record.id, record, revision);
  mesh.logger?.info(
    { handActId: record.id, actor: record.actor, act: record.act, target: record.target, cause: record.cause, why: record.why },
    'hand-act recorded',
  );
}

/** Puts one outbox row in its bucket, by its id, seen once however often it is put. */
const putRecord = (mesh: OutboxMesh, row: OutboxRow): Promise<void> => (row.bucket === 'handActs' ? putHandAct(mesh, row) : putRelayedCall(mesh, row.body));

/**
 * One pass: claims up to RELAY_BATCH rows nobody holds (of `ids` when given), oldest first, puts
 * each, and deletes those put. Stops at the first put that fails (NATS away) and frees the rest, so
 * the next pass tries again. Answers how many were put.
 */
async function relayRecords(mesh: OutboxMesh, ids?: readonly string[]): Promise<number> {
  const only = ids ? sql`and id = any(${[...ids]}::text[])` : sql``;
  const claimMs = mesh.config.outboxClaimSeconds === undefined ? RELAY_CLAIM_MS : Math.round(mesh.config.outboxClaimSeconds * 1000);
  const claimed = await sql<OutboxRow>`
    update record_outbox set claimed_until = now() + ${`${claimMs} milliseconds`}::interval
     where seq in (select seq from record_outbox
                    where (claimed_until is null or claimed_until < now()) ${only}
                    order by seq limit ${RELAY_BATCH} for update skip locked)
    returning seq::text as seq, bucket, id, body`.execute(mesh.db);
  const rows = claimed.rows.sort((a, b) => Number(a.seq) - Number(b.seq));
  const done: string[] = [];
  try {
    for (const row of rows) {
      await putRecord(mesh, row);
      done.push(row.seq);
    }
  } finally {
    const left = rows.map((r) => r.seq).filter((s) => !done.includes(s));
    if (done.length > 0) await sql`delete from record_outbox where seq = any(${done}::bigint[])`.execute(mesh.db);
    if (left.length > 0) await sql`update record_outbox set claimed_until = null where seq = any(${left}::bigint[])`.execute(mesh.db);
  }
  return done.length;
}

/**
 * Puts now the records the acts of these calls left in the outbox, whoever holds their claim, and
 * answers the calls whose end was put. For the lease sweep: a call of a replica that died after its
 * act committed (and answered) has its records here until the dead replica's claim lapses
 * (RELAY_CLAIM_MS), and marking it ABANDONED meanwhile would contradict the answer its caller got.
 * A put by id finds a record already there, so a relay putting the same rows is harmless.
 */
export async function relayRecordsOfCalls(mesh: OutboxMesh, callIds: readonly string[]): Promise<Set<string>> {
  const ended = new Set<string>();
  if (callIds.length === 0) return ended;
  const ids = [...callIds];
  const found = await sql<OutboxRow>`
    select seq::text as seq, bucket, id, body from record_outbox
     where (bucket = 'calls' and id = any(${ids}::text[]))
        or (bucket = 'handActs' and body::jsonb->>'callId' = any(${ids}::text[]))
     order by seq`.execute(mesh.db);
  const done: string[] = [];
  try {
    for (const row of found.rows) {
      await putRecord(mesh, row);
      if (row.bucket === 'calls') ended.add(row.id);
      done.push(row.seq);
    }
  } finally {
    if (done.length > 0) await sql`delete from record_outbox where seq = any(${done}::bigint[])`.execute(mesh.db);
  }
  return ended;
}

/**
 * After an act committed: puts its own records now, waiting at most DELIVER_WAIT_MS. A failure is
 * logged, never thrown: the act is done, and the relay puts them later.
 */
export async function deliverSoon(mesh: OutboxMesh, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  const put = relayRecords(mesh, ids).catch((err) => {
    mesh.logger?.warn({ err: String(err), ids }, 'records of a committed act wait in the outbox: the relay puts them when NATS is back');
    return 0;
  });
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([put, new Promise((resolve) => (timer = setTimeout(resolve, DELIVER_WAIT_MS)))]);
  clearTimeout(timer);
}

/** How far the outbox is behind: rows waiting, and the age of the oldest, when last looked. */
export interface RelayLag {
  waiting: number;
  oldestMs: number;
  at: string | null;
}

export interface RecordRelay {
  /** The lag when the relay last looked (every RELAY_EVERY_MS): for /metrics and /ready. */
  lag(): RelayLag;
  stop(): Promise<void>;
}

let latestRelay: RecordRelay | undefined;

/** The lag of this process's running relay (the last started): rows waiting and the oldest's age. */
export const recordRelayLag = (): RelayLag => latestRelay?.lag() ?? { waiting: 0, oldestMs: 0, at: null };

/**
 * Every replica relays: each RELAY_EVERY_MS it relays what waits (anyone's rows, claimed so two
 * replicas never put the same row at once), and measures the lag. A pass that fails (NATS or the
 * store away) is logged once per outage and tried again on the next.
 */
export function startRecordRelay(mesh: OutboxMesh, everyMs = RELAY_EVERY_MS): RecordRelay {
  let lag: RelayLag = { waiting: 0, oldestMs: 0, at: null };
  let stopped = false;
  let failing = false;
  let timer: NodeJS.Timeout | undefined;
  let pass: Promise<void> = Promise.resolve();
  const tick = async () => {
    try {
      while (!stopped && (await relayRecords(mesh)) === RELAY_BATCH);
      const measured = await sql<{ waiting: string; oldest_ms: string | null }>`
        select count(*)::text as waiting, (extract(epoch from now() - min(written_at)) * 1000)::bigint::text as oldest_ms from record_outbox`.execute(mesh.db);
      const row = measured.rows[0];
      lag = { waiting: Number(row?.waiting ?? 0), oldestMs: Number(row?.oldest_ms ?? 0), at: new Date().toISOString() };
      if (failing) mesh.logger?.info({ waiting: lag.waiting }, 'the outbox relay is putting records again');
      failing = false;
    } catch (err) {
      if (!failing) mesh.logger?.warn({ err: String(err), waiting: lag.waiting }, 'the outbox relay cannot put records now: they wait in the store');
      failing = true;
    }
  };
  const schedule = () => {
    if (!stopped) timer = setTimeout(() => (pass = tick().then(schedule)), everyMs);
  };
  schedule();
  const relay: RecordRelay = {
    lag: () => lag,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await pass;
      if (latestRelay === relay) latestRelay = undefined;
    },
  };
  latestRelay = relay;
  return relay;
}

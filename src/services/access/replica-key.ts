import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';

/** A replica key is this many random bytes: HMAC-SHA256's own block of strength. */
const REPLICA_KEY_BYTES = 32;
/** Each replica reads the keys from the store this often (and, in the background, on a key id it does not know). */
const REPLICA_KEY_RELOAD_MS = 30_000;
/**
 * A rotated key is announced this long before it signs: every replica reads the keys at least once
 * in between (REPLICA_KEY_RELOAD_MS and a margin), so none meets a message sealed with a key it has
 * never read.
 */
const REPLICA_KEY_ACTIVATE_MS = REPLICA_KEY_RELOAD_MS + 15_000;
/**
 * Once a new key signs, the key before stays valid this long: a message sealed just before and
 * read late (a replica behind the stream, a stream read back) is still believed; nothing older is.
 */
export const REPLICA_KEY_GRACE_MS = 10 * 60_000;
/** A message sealed with a key id this replica does not know makes it read the keys again, at most this often. */
const UNKNOWN_KEY_RELOAD_MIN_MS = 1_000;
/** The keys read (and kept in the store): the one announced, the one signing and the one before. */
const KEYS_KEPT = 3;

/** The key's table, as this module reads it (migrations/0008_replica_key.ts). */
interface ReplicaKeyRow {
  id: number;
  secret: Uint8Array;
  active_at: Date;
}

/** One key: its id (sent beside every MAC, so a reader knows which key to check with), its secret, and since when it signs. */
interface ReplicaKey {
  id: number;
  secret: Buffer;
  activeAt: number;
}

/** A MAC and the id of the key that made it. */
interface Signature {
  keyId: number;
  mac: Buffer;
}

/**
 * The secret the replicas of one store share, to prove to each other what they publish on NATS
 * (the status today; a forwarded caller's identity next). Anyone on NATS can write any header;
 * only a replica reads the store.
 */
export interface ReplicaKeys {
  /** The key to sign with now: the newest whose `activeAt` has passed. */
  current(): ReplicaKey;
  /** HMAC-SHA256 of `chunks`, in order, with the current key. */
  sign(chunks: readonly Uint8Array[]): Signature;
  /**
   * Whether `mac` is the HMAC of `chunks` under key `keyId`, when that key is the current one, one
   * announced, or the one before the current within REPLICA_KEY_GRACE_MS of the current's start.
   * An unknown newer id makes the keys be read again in the background (at most once a second).
   * Compared in constant time; never throws.
   */
  verify(keyId: number, mac: Uint8Array, chunks: readonly Uint8Array[]): Promise<boolean>;
  /** Reads the keys from the store again now. */
  reload(): Promise<void>;
  stop(): void;
}

// biome-ignore lint/suspicious/noExplicitAny: this module owns its one table and takes the store untyped, as the migrations do.
type AnyStore = Kysely<any>;

const macOf = (secret: Buffer, chunks: readonly Uint8Array[]): Buffer => {
  const hmac = createHmac('sha256', secret);
  for (const chunk of chunks) hmac.update(chunk);
  return hmac.digest();
};

/** The keys in the store, newest first. */
async function readKeys(db: AnyStore): Promise<ReplicaKey[]> {
  const { rows } = await sql<ReplicaKeyRow>`select id, secret, active_at from replica_key order by id desc limit ${KEYS_KEPT}`.execute(db);
  return rows.map((r) => ({ id: Number(r.id), secret: Buffer.from(r.secret), activeAt: new Date(r.active_at).getTime() }));
}

/** Makes the first key when the store has none, signing at once; of replicas starting together, the first insert wins and the others read it. */
async function ensureReplicaKey(db: AnyStore): Promise<void> {
  await sql`insert into replica_key (id, secret) values (1, ${randomBytes(REPLICA_KEY_BYTES)}) on conflict (id) do nothing`.execute(db);
}

/**
 * Announces a new key, signing from `activateInMs` on (REPLICA_KEY_ACTIVATE_MS: every replica has
 * read it by then); the key before stays valid REPLICA_KEY_GRACE_MS after that, and older ones are
 * deleted. Of two rotations at once one wins, the other changes nothing. Answers the new key's id.
 */
export async function rotateReplicaKey(db: AnyStore, activateInMs = REPLICA_KEY_ACTIVATE_MS): Promise<number> {
  const { rows } = await sql<{ id: number }>`
    insert into replica_key (id, secret, active_at)
    select coalesce(max(id), 0) + 1, ${randomBytes(REPLICA_KEY_BYTES)}, now() + make_interval(secs => ${activateInMs / 1000}) from replica_key
    on conflict (id) do nothing
    returning id`.execute(db);
  const [{ id }] = rows.length ? rows : (await sql<{ id: number }>`select max(id) as id from replica_key`.execute(db)).rows;
  await sql`delete from replica_key where id <= ${Number(id) - KEYS_KEPT}`.execute(db);
  return Number(id);
}

/**
 * Loads the replicas' keys (making the first when the store has none) and reads them again every
 * REPLICA_KEY_RELOAD_MS, so a rotation reaches every replica before its key signs. A store away
 * keeps the keys last read. Throws when the store cannot be read at start.
 */
export async function startReplicaKeys(db: AnyStore, logger: Logger): Promise<ReplicaKeys> {
  await ensureReplicaKey(db);
  let keys = await readKeys(db);
  if (!keys.length) throw new Error('no replica key in the store after making one');
  let lastReload = Date.now();
  let reloading: Promise<void> | undefined;
  const reload = () =>
    (reloading ??= readKeys(db)
      .then((read) => {
        if (read.length) keys = read;
      })
      .catch((err) => logger.warn({ err: String(err) }, 'reading the replica keys failed: the keys last read are kept'))
      .finally(() => {
        lastReload = Date.now();
        reloading = undefined;
      }));
  const timer = setInterval(() => void reload(), REPLICA_KEY_RELOAD_MS);
  timer.unref();

  /** The signing key: the newest active one (the oldest kept, should none be active yet). */
  const current = (now = Date.now()) => keys.find((k) => k.activeAt <= now) ?? keys[keys.length - 1];
  /** The key `id` when a message sealed with it is believed: announced, current, or the one before within its grace. */
  const valid = (id: number): ReplicaKey | undefined => {
    const now = Date.now();
    const signing = current(now);
    const key = keys.find((k) => k.id === id);
    if (!key) return undefined;
    if (key.id >= signing.id) return key;
    const before = keys.find((k) => k.id < signing.id);
    return key === before && now - signing.activeAt < REPLICA_KEY_GRACE_MS ? key : undefined;
  };

  return {
    current: () => current(),
    sign(chunks) {
      const key = current();
      return { keyId: key.id, mac: macOf(key.secret, chunks) };
    },
    async verify(keyId, mac, chunks) {
      try {
        if (!Number.isSafeInteger(keyId)) return false;
        // A key announced while this replica could not read the store: read again, never waiting for it here.
        if (keyId > keys[0].id && !reloading && Date.now() - lastReload >= UNKNOWN_KEY_RELOAD_MIN_MS) void reload();
        const key = valid(keyId);
        if (!key) return false;
        const expected = macOf(key.secret, chunks);
        return mac.length === expected.length && timingSafeEqual(mac, expected);
      } catch {
        return false;
      }
    },
    reload,
    stop: () => clearInterval(timer),
  };
}

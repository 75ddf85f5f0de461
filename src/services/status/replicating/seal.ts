import type { MsgHdrs } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { ReplicaKeys } from '../../access/replica-key.js';
import type { ServingHolder } from '../../replicas/leases.js';
import { KEY_HEADER, REPLICA_HEADER, SEAL_HEADER, STATUS_REFUSALS, type StatusRefusal, type StatusSealing, sealedBytes, TERM_HEADER } from './wire.js';

/** A kind of refused status message is logged at most once this often (with how many since), so a flood is seen, not echoed. */
const STATUS_REFUSAL_LOG_EVERY_MS = 60_000;
/** The serving lease is read from the bucket (when the view does not name a sealed message's publisher) at most this often. */
const HOLDER_READ_MIN_MS = 250;

/** What sealing needs of the replica: its name, the shared keys, and the serving lease as it knows it. */
export interface StatusSealLink {
  replica: string;
  keys: Pick<ReplicaKeys, 'current' | 'sign' | 'verify'>;
  leases: {
    /** The term this replica serves in; undefined when it does not serve. */
    servingTerm(): number | undefined;
    /** The serving lease's holder as last heard; `fresh` reads it from the bucket. */
    servingHolder(fresh?: boolean): Promise<ServingHolder | undefined>;
  };
  logger: Logger;
}

/** The status's seal on this replica, and how many messages it refused by why. */
export interface StatusSeal extends StatusSealing {
  refused(): Readonly<Record<StatusRefusal, number>>;
  /** Every status message refused since start, whatever the reason (`mesh_status_refused_total`). */
  refusedTotal(): number;
}

/** This replica cannot seal: it does not serve (its lease lost while it published). */
class NotServing extends Error {
  constructor(replica: string) {
    super(`replica ${replica} does not hold the serving lease: it seals no status message`);
    this.name = 'NotServing';
  }
}

/** Whether `error` is this replica's seal refusing to seal because it no longer serves. */
export const isNotServing = (error: unknown): boolean => error instanceof NotServing;

const decodeMac = (raw: string | undefined): Buffer | undefined => {
  if (!raw || raw.length > 128) return undefined;
  const mac = Buffer.from(raw, 'base64url');
  return mac.length ? mac : undefined;
};

/**
 * Seals every status message this replica publishes as the serving one (its name, its serving
 * term, the current replica key's id, and an HMAC over the body and every framing header), and
 * checks every one it reads: taken only when the seal is good under the current key (or the one
 * before, within its grace), its publisher holds the serving lease, and its term is no older than
 * one already taken. Anyone on NATS can publish there and write any header; only a replica reads
 * the key from the store.
 */
export function statusSeal(link: StatusSealLink): StatusSeal {
  const counts = Object.fromEntries(STATUS_REFUSALS.map((r) => [r, 0])) as Record<StatusRefusal, number>;
  const logged = new Map<StatusRefusal, { at: number; since: number }>();
  let highestTerm = -1;
  let holderRead: { at: number; holder: Promise<ServingHolder | undefined> } | undefined;

  /** The holder from the bucket, read at most every HOLDER_READ_MIN_MS: a takeover seen before the view hears it. */
  const freshHolder = () => {
    const now = Date.now();
    if (!holderRead || now - holderRead.at >= HOLDER_READ_MIN_MS) holderRead = { at: now, holder: link.leases.servingHolder(true).catch(() => undefined) };
    return holderRead.holder;
  };

  return {
    seal(h: MsgHdrs, data: Uint8Array) {
      const term = link.leases.servingTerm();
      if (term === undefined) throw new NotServing(link.replica);
      h.set(REPLICA_HEADER, link.replica);
      h.set(TERM_HEADER, String(term));
      // The key's id goes under the seal too; nothing runs between reading it and signing.
      h.set(KEY_HEADER, String(link.keys.current().id));
      h.set(SEAL_HEADER, link.keys.sign(sealedBytes(h, data)).mac.toString('base64url'));
    },
    async check(h, data) {
      const replica = h?.get(REPLICA_HEADER);
      const term = Number(h?.get(TERM_HEADER) || Number.NaN);
      const keyId = Number(h?.get(KEY_HEADER) || Number.NaN);
      const mac = decodeMac(h?.get(SEAL_HEADER));
      if (!h || !replica || !Number.isSafeInteger(term) || term < 0 || !Number.isSafeInteger(keyId) || !mac) return 'unsealed';
      if (!(await link.keys.verify(keyId, mac, sealedBytes(h, data)))) return 'forged';
      if (term < highestTerm) return 'stale-term';
      const holds = (holder: ServingHolder | undefined) => holder?.replica === replica && holder.term === term;
      // A sealed message of a term before the serving one is a past holder's, read from the stream's
      // history (a replica restarted, or one that took over): only a replica could seal it, and
      // stale-term keeps a past holder from being taken after the serving one was. So is one read
      // while no replica holds the lease (the last holder gave it up): a replica starting reads the
      // stream before it may serve (`Leases.mayServe`).
      const serving = await link.leases.servingHolder();
      const past = serving === undefined || term < serving.term;
      if (!past && !holds(serving) && !holds(await freshHolder())) return 'not-serving';
      highestTerm = term;
      return undefined;
    },
    refuse(reason, detail) {
      counts[reason]++;
      const now = Date.now();
      const last = logged.get(reason);
      if (last && now - last.at < STATUS_REFUSAL_LOG_EVERY_MS) {
        last.since++;
        return;
      }
      logged.set(reason, { at: now, since: 0 });
      link.logger.warn(
        { ...detail, reason, refused: counts[reason], sinceLastWarning: last?.since ?? 0 },
        'a status message not taken (not the serving replica’s, or out of bounds): ignored',
      );
    },
    refused: () => ({ ...counts }),
    refusedTotal: () => Object.values(counts).reduce((a, b) => a + b, 0),
  };
}

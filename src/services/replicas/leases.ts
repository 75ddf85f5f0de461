import type { JetStreamManager } from '@nats-io/jetstream';
import type { KvEntry } from '@nats-io/kv';
import type { Logger } from 'pino';
import type { Buckets } from '../../bus/buckets.js';
import { KvView } from '../../bus/kv-view.js';
import { isLeaderless } from '../../bus/retry.js';
import { abandonCall, type CallSummary, type CallsMesh } from '../calls/records.js';
import type { HandActLog } from '../hand-acts/hand-acts.js';
import { type OutboxMesh, relayRecordsOfCalls } from '../outbox/outbox.js';

/**
 * A replica that stops refreshing loses its lease after this: "within seconds", as DESIGN.md asks,
 * and short enough that a replica taking over from a dead serving one composes within 5 s of its
 * death (LEASE_TTL_MS + LEASE_REFRESH_MS).
 */
export const LEASE_TTL_MS = 4_000;
/** Each replica refreshes its lease (and the serving lease, when it holds it) this often: four tries per TTL. */
export const LEASE_REFRESH_MS = 1_000;
/**
 * A replica trusts that it serves for this long after it last renewed the serving lease, by its
 * own monotonic clock: less than the TTL, so a replica frozen past its lease (a GC pause, a
 * suspended VM) knows on waking that another may serve, before it publishes anything.
 */
export const SERVING_TRUSTED_MS = LEASE_TTL_MS - LEASE_REFRESH_MS;
/** An expired lease entry is deleted once its replica's calls have had this long to be marked. */
const LEASE_FORGET_AFTER_MS = 60_000;

/** The key of the lease naming which replica serves (composes the status). */
export const SERVING_KEY = 'serving';
const replicaKey = (replica: string) => `replica.${replica}`;

/**
 * A lease as kept in `<controller>_leases`. NATS 2.9 has no per-key TTL, so a lease is an entry
 * with an expiry time that its owner refreshes; it is gone when absent or past `expiresAt`.
 * Expiry is judged on each replica's clock: replicas are assumed to keep time (NTP) within a second.
 */
export interface Lease {
  replica: string;
  expiresAt: string;
  startedAt: string;
  /**
   * On the serving lease: its term, the revision of the entry its holder took it over from (0 when
   * none was), kept while the holder refreshes. Each takeover's is higher than the one before (the
   * take is a compare-and-set on that revision), so a reader refuses a composition of an older term.
   */
  term?: number;
}

/** Who holds the serving lease, and since which takeover (`Lease.term`). */
export interface ServingHolder {
  replica: string;
  term: number;
}

/** What lease keeping needs of the mesh: the leases bucket and this replica's name. */
interface LeaseMesh {
  buckets: Pick<Buckets, 'leases' | 'names'>;
  config: { replica: string };
}

function decodeLease(entry: KvEntry): Lease | undefined {
  try {
    const lease = entry.json<Lease>();
    if (!lease || typeof lease.replica !== 'string' || typeof lease.expiresAt !== 'string') return undefined;
    return lease.term === undefined || Number.isSafeInteger(lease.term) ? lease : { ...lease, term: undefined };
  } catch {
    return undefined;
  }
}

const alive = (lease: Lease | undefined, now: number): lease is Lease => !!lease && Date.parse(lease.expiresAt) > now;

const leaseOf = (mesh: LeaseMesh, startedAt: string, term?: number): Lease => ({
  replica: mesh.config.replica,
  expiresAt: new Date(Date.now() + LEASE_TTL_MS).toISOString(),
  startedAt,
  ...(term !== undefined && { term }),
});
const leaseFor = (mesh: LeaseMesh, startedAt: string, term: number): string => JSON.stringify(leaseOf(mesh, startedAt, term));

/**
 * `acquireServing`, answering the term this replica serves in (`Lease.term`), or undefined when
 * another replica serves.
 */
async function takeServing(mesh: LeaseMesh, startedAt: string): Promise<number | undefined> {
  const kv = mesh.buckets.leases;
  try {
    const entry = await kv.get(SERVING_KEY);
    const held = entry && entry.operation === 'PUT' ? decodeLease(entry) : undefined;
    if (!entry || !held) {
      const term = entry?.revision ?? 0;
      await kv.create(SERVING_KEY, leaseFor(mesh, startedAt, term));
      return term;
    }
    if (held.replica === mesh.config.replica || !alive(held, Date.now())) {
      // A refresh keeps the term; a takeover (or a lease written before terms) starts one.
      const term = held.replica === mesh.config.replica && held.term !== undefined ? held.term : entry.revision;
      await kv.update(SERVING_KEY, leaseFor(mesh, startedAt, term), entry.revision);
      return term;
    }
    return undefined;
  } catch (error) {
    // No stream leader (a NATS node died): nothing is known, so this replica's standing is kept until the next try.
    if (isLeaderless(error)) throw error;
    return undefined; // another replica wrote first: it serves
  }
}

/**
 * Takes the serving lease for this replica, or refreshes it when this replica holds it: created
 * when absent, taken over with compare-and-set on the revision when its holder's lease expired (so
 * of several replicas trying at once exactly one wins). True when this replica now serves.
 */
export async function acquireServing(mesh: LeaseMesh, startedAt = new Date().toISOString()): Promise<boolean> {
  return (await takeServing(mesh, startedAt)) !== undefined;
}

/** The serving lease's holder and term as the bucket has it now, expired or not (a lease written before terms has term 0). */
export async function readServingHolder(mesh: Pick<LeaseMesh, 'buckets'>): Promise<ServingHolder | undefined> {
  const entry = await mesh.buckets.leases.get(SERVING_KEY);
  const held = entry && entry.operation === 'PUT' ? decodeLease(entry) : undefined;
  return held && { replica: held.replica, term: held.term ?? 0 };
}

/** The replica holding the serving lease, when one holds it unexpired. */
export async function servingLease(mesh: LeaseMesh): Promise<Lease | undefined> {
  const entry = await mesh.buckets.leases.get(SERVING_KEY);
  const held = entry && entry.operation === 'PUT' ? decodeLease(entry) : undefined;
  return alive(held, Date.now()) ? held : undefined;
}

/** Gives the serving lease up when this replica holds it, so another takes over at once. */
export async function releaseServing(mesh: LeaseMesh): Promise<void> {
  const entry = await mesh.buckets.leases.get(SERVING_KEY);
  const held = entry && entry.operation === 'PUT' ? decodeLease(entry) : undefined;
  if (entry && held?.replica === mesh.config.replica) await mesh.buckets.leases.delete(SERVING_KEY, { previousSeq: entry.revision }).catch(() => undefined);
}

/** This replica's lease keeping, as the rest of the gateway sees it. */
export interface Leases {
  /** Whether this replica held the serving lease at its last refresh. */
  isServing(): boolean;
  /** The term this replica serves in (`Lease.term`) while it serves; undefined otherwise. */
  servingTerm(): number | undefined;
  /**
   * The serving lease's holder and term as this replica last heard them (expired or not: the last
   * holder's compositions are its until another takes over); `fresh` reads the bucket now.
   */
  servingHolder(fresh?: boolean): Promise<ServingHolder | undefined>;
  /**
   * From now on this replica contends for the serving lease (at once, resolving once it tried):
   * called once it can compose, its hearing rebuilt from the news stream and the status stream read.
   * Until then it leaves the lease to a replica that can, so the survivor of a SIGKILL takes over, not a
   * replacement still re-reading the news.
   */
  mayServe(): Promise<void>;
  /**
   * Called with true when this replica takes the serving lease, false when it loses it; `resumed`
   * when it takes it back in the term it lapsed in (its trust ran out, a stall, and no other replica
   * held it since). Returns the unsubscribe.
   */
  onServingChange(listener: (serving: boolean, resumed: boolean) => void): () => void;
  /** The replicas whose lease is alive, this one included. */
  liveReplicas(): string[];
  /**
   * Since when some replica has been running without a gap: the earliest start among the live
   * replicas. News from before it may have gone unheard while no replica ran.
   */
  continuousSince(): Date;
  /**
   * Marks ABANDONED the RUNNING calls of replicas whose lease is gone — OK instead when the call's
   * hand-act shows its work done; returns how many this replica marked.
   */
  sweep(): Promise<number>;
  /** Stops refreshing and gives up this replica's leases. */
  stop(): Promise<void>;
}

/**
 * Writes this replica's lease, marks ABANDONED the RUNNING calls of every replica whose lease is
 * gone (and of an earlier process under this replica's name), then every LEASE_REFRESH_MS refreshes
 * the lease, contends for the serving lease (once `mayServe` was called) and sweeps again, so a replica that died while others
 * run has its calls marked within seconds, not at the next restart.
 */
export async function startLeases(
  mesh: CallsMesh & Pick<HandActLog, 'views'> & OutboxMesh & LeaseMesh & { logger: Logger },
  jsm: JetStreamManager,
): Promise<Leases> {
  const { buckets, config, logger } = mesh;
  const startedAt = new Date();
  const startedIso = startedAt.toISOString();
  const me = config.replica;
  const view = await KvView.start(buckets.leases, buckets.names.leases, jsm, { decode: decodeLease, logger });
  const listeners = new Set<(serving: boolean, resumed: boolean) => void>();
  let serving = false;
  let term: number | undefined;
  /** The term this replica stopped trusting it serves in (its refresh came late), while the lease may still be its own. */
  let lapsedTerm: number | undefined;
  let stopped = false;
  /** When the serving lease was last renewed (performance.now()). */
  let servingRenewedAt = Number.NEGATIVE_INFINITY;
  const trusted = () => performance.now() - servingRenewedAt < SERVING_TRUSTED_MS;
  const tell = (now: boolean, resumed = false) => {
    serving = now;
    logger.info({ replica: me, serving, ...(resumed && { resumedTerm: term }) }, serving ? 'serving lease taken' : 'serving lease lost');
    for (const listener of listeners) listener(serving, resumed);
  };

  const refresh = async () => {
    const lease = leaseOf(mesh, startedIso);
    view.apply(replicaKey(me), lease, await buckets.leases.put(replicaKey(me), JSON.stringify(lease)));
  };

  const liveReplicas = () => {
    const now = Date.now();
    return view
      .values()
      .filter((e) => e.key.startsWith('replica.') && alive(e.value, now))
      .map((e) => e.value.replica);
  };

  /** The hand-act each call left, by call id; built only when some call is to be marked. */
  const handActsByCall = () => {
    const byCall = new Map<string, string>();
    for (const { value } of mesh.views.handActs.values()) if (value.callId) byCall.set(value.callId, value.id);
    return byCall;
  };

  /**
   * The ends waiting in the outbox of these calls, put now (relayRecordsOfCalls): the calls whose
   * act committed. With the store away none is known, and the sweep guesses as before; a relayed
   * end is put over its guess later.
   */
  const endsInOutbox = async (callIds: string[]) => {
    try {
      return await relayRecordsOfCalls(mesh, callIds);
    } catch (err) {
      logger.warn({ err: String(err), calls: callIds.length }, 'could not look in the outbox for the ends of stopped replicas’ calls: settling them without');
      return new Set<string>();
    }
  };

  const sweep = async () => {
    const live = new Set(liveReplicas());
    let marked = 0;
    let done = 0;
    let acts: Map<string, string> | undefined;
    const orphans: { key: string; call: CallSummary; revision: number; earlierSelf: boolean }[] = [];
    for (const { key, value: call, revision } of mesh.views.calls.values()) {
      if (call.state !== 'RUNNING') continue;
      const earlierSelf = call.replica === me && Date.parse(call.startedAt) < startedAt.getTime();
      if (call.replica === me ? !earlierSelf : live.has(call.replica)) continue;
      orphans.push({ key, call, revision, earlierSelf });
    }
    const relayed = orphans.length > 0 ? await endsInOutbox(orphans.map((o) => o.key)) : new Set<string>();
    for (const { key, call, revision, earlierSelf } of orphans) {
      if (relayed.has(key)) continue;
      acts ??= handActsByCall();
      const handAct = acts.get(key);
      const reason = earlierSelf ? `replica ${me} restarted while the call ran` : `replica ${call.replica} stopped while the call ran (its lease is gone)`;
      if (await abandonCall(mesh, key, revision, reason, handAct)) {
        marked++;
        if (handAct) done++;
      }
    }
    const now = Date.now();
    for (const entry of view.values()) {
      if (entry.key.startsWith('replica.') && Date.parse(entry.value.expiresAt) < now - LEASE_FORGET_AFTER_MS) {
        await buckets.leases.delete(entry.key, { previousSeq: entry.revision }).catch(() => undefined);
      }
    }
    if (marked || relayed.size)
      logger.info(
        { marked, doneBeforeTheStop: done, endsRelayed: relayed.size },
        'calls of stopped replicas settled: their end from the outbox, OK when their hand-act shows the work done, or ABANDONED',
      );
    return marked;
  };

  let mayServe = false;
  const contend = async () => {
    if (!mayServe) return;
    const askedAt = performance.now();
    term = await takeServing(mesh, startedIso);
    const now = term !== undefined;
    if (now) servingRenewedAt = askedAt;
    // The same term taken back: a refresh keeps the term and a takeover starts one, so no other replica served since.
    const resumed = now && term === lapsedTerm;
    if (!now || now !== serving) lapsedTerm = undefined;
    if (now !== serving) tell(now, resumed);
  };
  // A lease not renewed in time (this process frozen, NATS slow) is let go here, not at the next
  // refresh: the composer stops at once, and composes in full when it takes the lease again.
  const watchdog = setInterval(() => {
    if (serving && !trusted()) {
      lapsedTerm = term;
      tell(false);
    }
  }, LEASE_REFRESH_MS / 4);
  watchdog.unref();

  await refresh();
  await sweep();
  let running: Promise<void> = Promise.resolve();
  // A round still under way (NATS not answering: each request waits out its time-out) skips the
  // next: rounds queued behind it would only put stale leases one after another, without end.
  let inRound = false;
  const timer = setInterval(() => {
    if (inRound) return;
    inRound = true;
    const askedAt = performance.now();
    running = running
      .then(async () => {
        if (stopped) return;
        await refresh();
        await contend();
        await sweep();
      })
      .catch((err) => logger.warn({ err: String(err), serving, tookMs: Math.round(performance.now() - askedAt) }, 'lease refresh failed'))
      .finally(() => {
        inRound = false;
      });
  }, LEASE_REFRESH_MS);

  const continuousSince = () => {
    const now = Date.now();
    let earliest = startedAt.getTime();
    for (const e of view.values()) {
      if (e.key.startsWith('replica.') && alive(e.value, now)) earliest = Math.min(earliest, Date.parse(e.value.startedAt));
    }
    return new Date(earliest);
  };

  return {
    isServing: () => serving && trusted(),
    servingTerm: () => (serving && trusted() ? term : undefined),
    async servingHolder(fresh = false) {
      if (fresh) return readServingHolder(mesh);
      const held = view.get(SERVING_KEY)?.value;
      return held && { replica: held.replica, term: held.term ?? 0 };
    },
    continuousSince,
    mayServe() {
      mayServe = true;
      running = running.then(contend).catch((err) => logger.warn({ err }, 'contending for the serving lease failed'));
      return running;
    },
    onServingChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    liveReplicas,
    sweep,
    async stop() {
      stopped = true;
      clearInterval(timer);
      clearInterval(watchdog);
      await running;
      view.stop();
      if (serving) await releaseServing(mesh);
      serving = false;
      await buckets.leases.delete(replicaKey(me)).catch(() => undefined);
    },
  };
}

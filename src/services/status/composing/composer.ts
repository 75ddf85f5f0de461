import type { Logger } from 'pino';
import type { Buckets } from '../../../bus/buckets.js';
import type { Bus } from '../../../bus/nats.js';
import { isLeaderless } from '../../../bus/retry.js';
import type { Subjects } from '../../../bus/subjects.js';
import { inSpan, ROOT_CONTEXT } from '../../../bus/trace-context.js';
import { isStoreUnavailable } from '../../../kernel/errors.js';
import type { Store } from '../../../store/db.js';
import type { CallsMesh } from '../../calls/records.js';
import type { MeshEvents } from '../../events.js';
import type { HandActLog } from '../../hand-acts/hand-acts.js';
import type { NewsHearing } from '../../news/hearing.js';
import type { Composition, StatusFeed } from '../composition.js';
import { publishComposition } from '../replicating/encode.js';
import { ServingFenced } from '../replicating/stream-publisher.js';
import { type CompositionSources, meshSources } from './compose.js';
import { type CrossingTimer, crossingTimer } from './crossing.js';
import type { ComposeTrigger } from './poke.js';
import { gatherPokes } from './poke-gathering.js';
import { COMPOSE_RETRY_MS, composeScheduler, type Scheduled } from './scheduler.js';
import { followServingLease, type ServingLease } from './serving-lease.js';
import { type ComposeStep, composeStep, type Step } from './step.js';

/** What the composer needs of the mesh: the store, the bus and subjects, the leases bucket, the feed and lease of this replica. */
export type ComposerMesh = CallsMesh &
  HandActLog & {
    db: Store;
    bus: Pick<Bus, 'nc'>;
    subjects: Pick<Subjects, 'root' | 'status'>;
    buckets: Pick<Buckets, 'leases' | 'calls' | 'handActs'>;
    config: { controller: string; replica: string; heartbeatSeconds: number };
    logger: Logger;
    events: MeshEvents;
    status: StatusFeed;
    leases: ServingLease;
    /** How far the news is heard: states are judged at it. Absent (a test's mesh): judged at the wall clock. */
    hearing?: Pick<NewsHearing, 'refresh' | 'onRead'> & Partial<Pick<NewsHearing, 'shown' | 'onHeard' | 'machines'>>;
  };

export interface ComposerStats {
  compositions: number;
  /** Of them, composed from the whole store (start, takeover, every minute, changes news does not make). */
  full: number;
  /** Of them, composed from the last one and the machines news named. */
  incremental: number;
  failures: number;
  /** Compositions made and not published: this replica no longer served when they were done (docs/status.md). */
  dropped: number;
  lastTookMs: number | undefined;
  lastSeq: number;
}

export interface Composer {
  /**
   * Asks for a composition on this replica (when it serves), coalesced with any already asked;
   * `machines` are those news wrote (trigger `news`), which an incremental composition re-reads.
   */
  request(trigger: ComposeTrigger, machines?: readonly string[]): void;
  /**
   * Asks the serving replica, wherever it is, for a composition: gathered POKE_GATHER_MS, then
   * asked of this replica's own composer when it serves, else over `<subjects>.compose`.
   */
  poke(trigger: ComposeTrigger, machines?: readonly string[]): void;
  serving(): boolean;
  /** Whether a composition is being composed right now. */
  composing(): boolean;
  stats: ComposerStats;
  stop(): Promise<void>;
}

/** The last seq composed, kept in the leases bucket so the seq grows even after every replica stopped. */
export const SEQ_KEY = 'status-seq';

async function lastSeqKept(mesh: ComposerMesh): Promise<number> {
  const entry = await mesh.buckets?.leases.get(SEQ_KEY);
  const seq = entry ? Number(entry.string()) : 0;
  return Number.isSafeInteger(seq) && seq > 0 ? seq : 0;
}

/**
 * Runs the composer on every replica; only the holder of the serving lease composes. It composes
 * when it takes the lease (`start`, or `takeover` after another held it), when asked on
 * `<subjects>.compose` (every replica forwards its news, acting verbs and plan changes there),
 * and every COMPOSE_EVERY_MS. Requests are coalesced: at most one composition in flight, at most
 * one started per COMPOSE_MIN_GAP_MS, and the triggers gathered meanwhile make the next one's
 * trigger. Each composition is full or incremental, as `step.ts` chooses (docs/status.md).
 * The seq continues from the highest heard on `<subjects>.status` or kept under SEQ_KEY,
 * so it only grows, across replicas and across a stop of them all. The rooms it wires: the
 * scheduler (scheduler.ts), the crossing timer (crossing.ts), the poke gathering
 * (poke-gathering.ts), the serving lease (serving-lease.ts).
 */
export function startComposer(mesh: ComposerMesh, deps: { feed?: StatusFeed; lease?: ServingLease; sources?: CompositionSources } = {}): Composer {
  const feed = deps.feed ?? mesh.status;
  const lease = deps.lease ?? mesh.leases;
  const stats: ComposerStats = { compositions: 0, full: 0, incremental: 0, failures: 0, dropped: 0, lastTookMs: undefined, lastSeq: 0 };
  const step: ComposeStep = tracedCompositions(composeStep(mesh.db));
  let composedOnce = false;
  const crossing = crossingTimer(mesh.hearing, (trigger) => scheduler.request(trigger));
  const compose = oneComposition(mesh, { feed, lease, sources: deps.sources ?? meshSources(mesh), step, stats, crossing });
  const scheduler = composeScheduler({
    serving: () => lease.isServing(),
    asked: (trigger, machines) => step.ask(trigger, machines),
    compose: (triggers, began) => {
      composedOnce = true;
      return compose(triggers, began);
    },
  });
  const offShown = tellHearingShown(feed, mesh.hearing);
  // Machines heard later are judged again from memory; only the serving replica's own hearing asks
  // (every replica hears every beat), and only for machines its view holds heard earlier.
  const offHeard = mesh.hearing?.onHeard?.(
    (machines) => {
      const lastMs = mesh.hearing?.machines?.lastMs.bind(mesh.hearing.machines);
      if (!lease.isServing() || !lastMs) return;
      const later = step.heardLater(machines, lastMs);
      if (later.length) scheduler.request('heard', later);
    },
    () => lease.isServing(),
  );
  const pokes = gatherPokes({ nc: mesh.bus.nc, root: mesh.subjects.root, serving: () => lease.isServing(), request: scheduler.request }, mesh.events);
  const offLease = followServingLease({
    lease,
    feed,
    logger: mesh.logger,
    replica: mesh.config.replica,
    composedOnce: () => composedOnce,
    compose: (trigger) => {
      // Another replica may have composed since this one last did: what it held is stale.
      step.forget();
      scheduler.request(trigger);
    },
    stopComposing: () => {
      scheduler.clear();
      step.lapse();
    },
    resume: () => {
      step.resume();
      scheduler.request('resumed');
    },
    // A replica that does not serve asks for a composition, so it has one to answer with.
    notServing: () => pokes.poke('replica-joined'),
  });

  return {
    request: scheduler.request,
    poke: pokes.poke,
    serving: () => lease.isServing(),
    composing: scheduler.composing,
    stats,
    async stop() {
      crossing.stop();
      pokes.stop();
      offLease();
      offShown();
      offHeard?.();
      await scheduler.stop();
    },
  };
}

// Every composition heard (this replica's, or another's followed from the status stream) tells
// the hearing which states were shown, so no deaf span learned later reaches back past them.
function tellHearingShown(feed: StatusFeed, hearing: ComposerMesh['hearing']): () => void {
  const tellShown = (c: Composition | undefined) => {
    if (c) hearing?.shown?.(Date.parse(c.heardUntil ?? c.composedAt), Date.parse(c.composedAt));
  };
  tellShown(feed.current());
  return feed.subscribe(tellShown);
}

/** What one composition is made with, besides the mesh. */
interface Composing {
  feed: StatusFeed;
  lease: ServingLease;
  sources: CompositionSources;
  step: ComposeStep;
  stats: ComposerStats;
  crossing: CrossingTimer;
}

/**
 * One composition of the triggers asked: its seq, made by the step, published unless this replica
 * lost the lease meanwhile, the crossing timer set from it, its seq kept. A failure is logged, and
 * answered `retry` when the store or NATS is away.
 */
function oneComposition(mesh: ComposerMesh, c: Composing): Scheduled['compose'] {
  const { feed, lease, step, stats } = c;
  return (asked, began) => {
    const trigger = asked.join(',');
    const taken: Step = step.take();
    let seq = 0;
    // The watermark is read before the store: memory holds every beat up to it, and the rows read after it what is written.
    return Promise.all([lastSeqKept(mesh), mesh.hearing?.refresh()])
      .then(([kept, heard]) => {
        seq = Math.max(stats.lastSeq, feed.current()?.seq ?? 0, kept) + 1;
        stats.lastSeq = seq;
        // The gap is kept between the instants compositions are composed at (their composedAt),
        // not between requests: the seq read before it takes a varying few milliseconds.
        const now = began();
        return step.compose(taken, {
          now,
          seq,
          controller: mesh.config.controller,
          servingReplica: mesh.config.replica,
          trigger,
          heartbeatSeconds: mesh.config.heartbeatSeconds,
          sources: c.sources,
          heardUntil: heard ? new Date(heard.heardUntilMs) : undefined,
          heard: heard?.machines,
          deaf: heard?.deaf,
          shown: feed.current(),
        });
      })
      .then(async (composition): Promise<'done' | 'retry'> => {
        // A replica frozen while composing (a GC pause, a suspended VM) may have lost the lease
        // meanwhile, and another composed past it: what it made then is stale, never published.
        if (!lease.isServing() || (feed.current()?.seq ?? 0) >= seq) {
          stats.dropped++;
          step.forget();
          mesh.logger.warn({ seq, trigger, replica: mesh.config.replica }, 'a composition made while this replica lost the serving lease is dropped');
          return 'done';
        }
        stats.compositions++;
        stats[taken.full ? 'full' : 'incremental']++;
        stats.lastTookMs = composition.tookMs;
        // Through the status stream when the feed has one (deltas, snapshots), else whole on `<subjects>.status`.
        await (feed.publish ? feed.publish(composition, ...asked) : publishComposition(mesh.bus.nc, mesh.subjects.status, composition));
        c.crossing.arm(step.crossing());
        // Published already: a seq not kept (its stream electing a leader) is kept with the next composition, not a failure.
        await mesh.buckets?.leases
          .put(SEQ_KEY, String(seq))
          .catch((err) => mesh.logger.warn({ err: String(err), seq }, 'the status seq could not be kept: it is kept with the next composition'));
        mesh.logger.debug({ seq, trigger, tookMs: composition.tookMs, machines: composition.machines.length }, 'status composed');
        return 'done';
      })
      .catch((err) => compositionFailed(mesh, c, err, { seq, trigger }));
  };
}

// A composition fenced off (the lease lost) is dropped; one that failed leaves the next one full.
function compositionFailed(mesh: ComposerMesh, c: Composing, err: unknown, at: { seq: number; trigger: string }): 'done' | 'retry' {
  const { seq, trigger } = at;
  if (err instanceof ServingFenced) {
    c.stats.dropped++;
    c.step.forget();
    mesh.logger.warn(
      { seq, trigger, replica: mesh.config.replica, err: err.message },
      'a composition made while this replica lost the serving lease is dropped',
    );
    return 'done';
  }
  c.stats.failures++;
  c.step.forget(); // the next composition is a full one
  const away = isStoreUnavailable(err) ? 'the store' : isLeaderless(err) ? 'NATS' : undefined;
  if (!away) {
    mesh.logger.error({ err, seq, trigger }, 'composing the status failed');
    return 'done';
  }
  // An outage the operator sees already: the last composition is still served from memory,
  // and this one is asked again shortly (a replica that lost the lease meanwhile asks nothing).
  mesh.logger.warn({ err: String(err), seq, trigger, retryInMs: COMPOSE_RETRY_MS }, `composing the status failed: ${away} is unavailable`);
  return 'retry';
}

/** The step with each composition in a span of its own, a trace of its own: many causes ask for one. */
function tracedCompositions(step: ComposeStep): ComposeStep {
  const compose = step.compose.bind(step);
  return Object.assign(step, {
    compose: (taken: Step, input: Parameters<ComposeStep['compose']>[1]) =>
      inSpan(
        'composition',
        { parent: ROOT_CONTEXT, attributes: { 'mesh.status.seq': input.seq, 'mesh.status.trigger': input.trigger, 'mesh.status.full': taken.full } },
        () => compose(taken, input),
      ),
  });
}

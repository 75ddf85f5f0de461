import type { Subscription } from '@nats-io/transport-node';
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
import { ServingFenced } from '../replicating/stream-publisher.js';
import { publishComposition } from '../replicating/wire.js';
import { type CompositionSources, meshSources } from './compose.js';
import { CROSSING_RECHECK_MS, CROSSING_SLACK_MS } from './crossing.js';
import { type ComposeTrigger, composeSubject, POKE_MACHINES_MAX, pokeBody, readPoke } from './poke.js';
import { POKE_GATHER_MS } from './poke-gathering.js';
import { COMPOSE_EVERY_MS, COMPOSE_MIN_GAP_MS, COMPOSE_RETRY_MS } from './scheduler.js';
import type { ServingLease } from './serving-lease.js';
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
    /** How far the news is written: states are judged at it. Absent (a test's mesh): judged at the wall clock. */
    hearing?: Pick<NewsHearing, 'refresh' | 'onRead'> & Partial<Pick<NewsHearing, 'shown'>>;
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
 * so it only grows, across replicas and across a stop of them all.
 */
export function startComposer(mesh: ComposerMesh, deps: { feed?: StatusFeed; lease?: ServingLease; sources?: CompositionSources } = {}): Composer {
  const feed = deps.feed ?? mesh.status;
  const lease = deps.lease ?? mesh.leases;
  const sources = deps.sources ?? meshSources(mesh);
  const stats: ComposerStats = { compositions: 0, full: 0, incremental: 0, failures: 0, dropped: 0, lastTookMs: undefined, lastSeq: 0 };
  const step: ComposeStep = tracedCompositions(composeStep(mesh.db));
  const triggers = new Set<ComposeTrigger>();
  let inFlight: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let lastStart = 0;
  let stopped = false;
  let composedOnce = false;
  let crossing: NodeJS.Timeout | undefined;
  let retry: NodeJS.Timeout | undefined;

  // A machine turns LATE or SILENT with time, not news: compose when the earliest one crosses
  // (found while composing: a pass over 100,000 machines' ISO instants here costs ~200 ms). The
  // crossing is a heard instant: when the wall clock has passed it but the news written has not
  // (this gateway is behind), the composition waits for the watermark to pass it, not the clock.
  let crossingHeard: number | undefined;
  const awaitCrossing = () => {
    if (crossing) clearTimeout(crossing);
    crossing = undefined;
    crossingHeard = undefined;
    const at = step.crossing();
    if (!at || stopped) return;
    const wait = at.getTime() - Date.now();
    if (wait < 0 && mesh.hearing) {
      // Behind: the watermark is read again every CROSSING_RECHECK_MS until it passes the crossing.
      crossingHeard = at.getTime();
      crossing = setTimeout(function recheck() {
        if (crossingHeard === undefined || stopped) return;
        void mesh.hearing?.refresh();
        crossing = setTimeout(recheck, CROSSING_RECHECK_MS);
        crossing.unref();
      }, CROSSING_RECHECK_MS);
      crossing.unref();
      return;
    }
    if (wait + CROSSING_SLACK_MS >= COMPOSE_EVERY_MS) return; // the minute's composition comes first
    crossing = setTimeout(() => {
      crossing = undefined;
      request('state-change');
    }, Math.max(0, wait) + CROSSING_SLACK_MS);
    crossing.unref();
  };
  // Every composition heard (this replica's, or another's followed from the status stream) tells
  // the hearing which states were shown, so no deaf span learned later reaches back past them.
  const tellShown = (c: Composition | undefined) => {
    if (c) mesh.hearing?.shown?.(Date.parse(c.heardUntil ?? c.composedAt), Date.parse(c.composedAt));
  };
  tellShown(feed.current());
  const offShown = feed.subscribe(tellShown);
  const offHeard = mesh.hearing?.onRead((heard) => {
    if (crossingHeard === undefined || heard.heardUntilMs < crossingHeard) return;
    crossingHeard = undefined;
    request('state-change');
  });

  const run = () => {
    const asked = [...triggers];
    const trigger = asked.join(',');
    triggers.clear();
    const taken: Step = step.take();
    lastStart = Date.now();
    composedOnce = true;
    let seq = 0;
    // The watermark is read before the store: every row read after it holds the news written up to it.
    inFlight = Promise.all([lastSeqKept(mesh), mesh.hearing?.refresh()])
      .then(([kept, heard]) => {
        seq = Math.max(stats.lastSeq, feed.current()?.seq ?? 0, kept) + 1;
        stats.lastSeq = seq;
        // The gap is kept between the instants compositions are composed at (their composedAt),
        // not between requests: the seq read before it takes a varying few milliseconds.
        lastStart = Date.now();
        return step.compose(taken, {
          seq,
          controller: mesh.config.controller,
          servingReplica: mesh.config.replica,
          trigger,
          heartbeatSeconds: mesh.config.heartbeatSeconds,
          sources,
          heardUntil: heard ? new Date(heard.heardUntilMs) : undefined,
          deaf: heard?.deaf,
          shown: feed.current(),
        });
      })
      .then(async (composition) => {
        // A replica frozen while composing (a GC pause, a suspended VM) may have lost the lease
        // meanwhile, and another composed past it: what it made then is stale, never published.
        if (!lease.isServing() || (feed.current()?.seq ?? 0) >= seq) {
          stats.dropped++;
          step.forget();
          mesh.logger.warn({ seq, trigger, replica: mesh.config.replica }, 'a composition made while this replica lost the serving lease is dropped');
          return;
        }
        stats.compositions++;
        stats[taken.full ? 'full' : 'incremental']++;
        stats.lastTookMs = composition.tookMs;
        // Through the status stream when the feed has one (deltas, snapshots), else whole on `<subjects>.status`.
        await (feed.publish ? feed.publish(composition, ...asked) : publishComposition(mesh.bus.nc, mesh.subjects.status, composition));
        awaitCrossing();
        // Published already: a seq not kept (its stream electing a leader) is kept with the next composition, not a failure.
        await mesh.buckets?.leases
          .put(SEQ_KEY, String(seq))
          .catch((err) => mesh.logger.warn({ err: String(err), seq }, 'the status seq could not be kept: it is kept with the next composition'));
        mesh.logger.debug({ seq, trigger, tookMs: composition.tookMs, machines: composition.machines.length }, 'status composed');
      })
      .catch((err) => {
        if (err instanceof ServingFenced) {
          stats.dropped++;
          step.forget();
          return mesh.logger.warn(
            { seq, trigger, replica: mesh.config.replica, err: err.message },
            'a composition made while this replica lost the serving lease is dropped',
          );
        }
        stats.failures++;
        step.forget(); // the next composition is a full one
        const away = isStoreUnavailable(err) ? 'the store' : isLeaderless(err) ? 'NATS' : undefined;
        if (!away) return mesh.logger.error({ err, seq, trigger }, 'composing the status failed');
        // An outage the operator sees already: the last composition is still served from memory,
        // and this one is asked again shortly (a replica that lost the lease meanwhile asks nothing).
        mesh.logger.warn({ err: String(err), seq, trigger, retryInMs: COMPOSE_RETRY_MS }, `composing the status failed: ${away} is unavailable`);
        if (retry || stopped) return;
        retry = setTimeout(() => {
          retry = undefined;
          for (const t of asked.length ? asked : (['retry'] as const)) request(t);
        }, COMPOSE_RETRY_MS);
        retry.unref();
      })
      .finally(() => {
        inFlight = undefined;
        kick();
      });
  };

  const kick = () => {
    if (stopped || inFlight || timer || triggers.size === 0) return;
    if (!lease.isServing()) return triggers.clear();
    const wait = lastStart + COMPOSE_MIN_GAP_MS - Date.now();
    if (wait > 0) {
      timer = setTimeout(() => {
        timer = undefined;
        kick();
      }, wait);
      return;
    }
    run();
  };

  const request = (trigger: ComposeTrigger, machines?: readonly string[]) => {
    if (stopped || !lease.isServing()) return;
    triggers.add(trigger);
    step.ask(trigger, machines);
    kick();
  };

  const pokes = new Set<ComposeTrigger>();
  const poked = new Set<string>();
  let pokeTimer: NodeJS.Timeout | undefined;
  // The machines news named travel with the triggers, POKE_MACHINES_MAX a message. The serving
  // replica asks its own composer: a round trip through NATS to itself would only add latency.
  const poke = (trigger: ComposeTrigger, machines?: readonly string[]) => {
    if (stopped) return;
    pokes.add(trigger);
    for (const m of machines ?? []) poked.add(m);
    pokeTimer ??= setTimeout(() => {
      pokeTimer = undefined;
      const names = [...poked];
      const asked = [...pokes];
      pokes.clear();
      poked.clear();
      if (lease.isServing()) {
        for (const t of asked) request(t, t === 'news' ? names : undefined);
        return;
      }
      const subject = composeSubject(mesh.subjects.root);
      for (let i = 0; i === 0 || i < names.length; i += POKE_MACHINES_MAX) mesh.bus.nc.publish(subject, pokeBody(asked, names.slice(i, i + POKE_MACHINES_MAX)));
    }, POKE_GATHER_MS);
  };

  const pokeSub: Subscription = mesh.bus.nc.subscribe(composeSubject(mesh.subjects.root), {
    callback: (err, msg) => {
      if (err || !lease.isServing()) return;
      const { triggers: names, machines } = readPoke(msg.data);
      for (const t of names) request(t, t === 'news' ? machines : undefined);
    },
  });

  const onNews = (kind: 'machine' | 'build', machines?: readonly string[]) => (kind === 'build' ? poke('build') : poke('news', machines ?? []));
  const onActed = () => poke('acted');
  const onPlan = () => poke('plan');
  mesh.events.on('news', onNews);
  mesh.events.on('acted', onActed);
  mesh.events.on('plan-changed', onPlan);

  const took = (trigger: ComposeTrigger) => {
    mesh.logger.info({ replica: mesh.config.replica, trigger }, 'took the serving lease: composing the status');
    request(trigger);
  };
  const offLease = lease.onServingChange((held) => {
    // A takeover first reads what the replica before showed (the stream, now): what it showed is
    // each state's floor, and a replica that was frozen holds an older one (docs/status.md).
    if (held && (composedOnce || feed.current())) void (feed.readUpToNow?.() ?? Promise.resolve()).then(() => lease.isServing() && took('takeover'));
    else if (held) took('start');
    else {
      mesh.logger.warn({ replica: mesh.config.replica }, 'lost the serving lease: no longer composing');
      triggers.clear();
      step.forget();
    }
  });
  if (lease.isServing()) took('start');
  // A replica that does not serve asks for a composition, so it has one to answer with.
  else poke('replica-joined');

  const minute = setInterval(() => request('minute'), COMPOSE_EVERY_MS);
  minute.unref();

  return {
    request,
    poke,
    serving: () => lease.isServing(),
    composing: () => inFlight !== undefined,
    stats,
    async stop() {
      stopped = true;
      clearInterval(minute);
      if (timer) clearTimeout(timer);
      if (crossing) clearTimeout(crossing);
      if (retry) clearTimeout(retry);
      if (pokeTimer) clearTimeout(pokeTimer);
      offLease();
      offHeard?.();
      offShown();
      pokeSub.unsubscribe();
      mesh.events.off('news', onNews);
      mesh.events.off('acted', onActed);
      mesh.events.off('plan-changed', onPlan);
      await inFlight;
    },
  };
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

import type { ComposeTrigger } from './poke.js';

/** At most one composition starts per this many ms (4 a second) however much news arrives. */
export const COMPOSE_MIN_GAP_MS = 250;
/** The serving replica composes at least this often, so states by heartbeat age move without news. */
export const COMPOSE_EVERY_MS = 60_000;

/**
 * A composition that failed because the store is unavailable is asked again this long after, so
 * compositions (and the crossing timer, set by each one) resume by themselves once it is back.
 */
export const COMPOSE_RETRY_MS = 2_000;

/** What one composition is, to the scheduler: asked, made, and maybe to be asked again. */
export interface Scheduled {
  /** Whether this replica serves: only then are requests taken. */
  serving(): boolean;
  /** Tells the composition to come what a request needs of it (`machines` news wrote), as it is asked. */
  asked(trigger: ComposeTrigger, machines?: readonly string[]): void;
  /**
   * Makes one composition of the triggers gathered, calling `began` at the instant it composes, which
   * answers that instant: the composition's `composedAt`, so the gap holds between composedAts (the
   * event loop's timers may fire a few ms early by the wall clock); answers `retry` when it failed for an outage and is asked again later.
   * It never throws.
   */
  compose(triggers: ComposeTrigger[], began: () => Date): Promise<'done' | 'retry'>;
}

export interface ComposeScheduler {
  request(trigger: ComposeTrigger, machines?: readonly string[]): void;
  /** Whether a composition is being composed right now. */
  composing(): boolean;
  /** Forgets the triggers gathered and not composed yet (the lease lost). */
  clear(): void;
  /** Stops scheduling; resolves when the composition in flight is done. */
  stop(): Promise<void>;
}

/**
 * Requests are coalesced: at most one composition in flight, at most one started per
 * COMPOSE_MIN_GAP_MS, and the triggers gathered meanwhile make the next one's trigger; one every
 * COMPOSE_EVERY_MS (`minute`) whatever else happens; one that failed for an outage asked again
 * COMPOSE_RETRY_MS after.
 */
export function composeScheduler(scheduled: Scheduled): ComposeScheduler {
  const triggers = new Set<ComposeTrigger>();
  let inFlight: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let retry: NodeJS.Timeout | undefined;
  let lastStart = 0;
  let stopped = false;

  const run = () => {
    const asked = [...triggers];
    triggers.clear();
    lastStart = Date.now();
    inFlight = scheduled
      .compose(asked, () => {
        lastStart = Date.now();
        return new Date(lastStart);
      })
      .then((outcome) => {
        if (outcome === 'retry') retryLater(asked);
      })
      .finally(() => {
        inFlight = undefined;
        kick();
      });
  };

  // A replica that lost the lease meanwhile asks nothing (`request` takes nothing then).
  const retryLater = (asked: ComposeTrigger[]) => {
    if (retry || stopped) return;
    retry = setTimeout(() => {
      retry = undefined;
      for (const t of asked.length ? asked : (['retry'] as const)) request(t);
    }, COMPOSE_RETRY_MS);
    retry.unref();
  };

  const kick = () => {
    if (stopped || inFlight || timer || triggers.size === 0) return;
    if (!scheduled.serving()) return triggers.clear();
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
    if (stopped || !scheduled.serving()) return;
    triggers.add(trigger);
    scheduled.asked(trigger, machines);
    kick();
  };

  const minute = setInterval(() => request('minute'), COMPOSE_EVERY_MS);
  minute.unref();

  return {
    request,
    composing: () => inFlight !== undefined,
    clear: () => triggers.clear(),
    async stop() {
      stopped = true;
      clearInterval(minute);
      if (timer) clearTimeout(timer);
      if (retry) clearTimeout(retry);
      await inFlight;
    },
  };
}

import type { Kysely } from 'kysely';
import type { DB } from '../../../store/tables.js';
import type { Composition } from '../composition.js';
import { type ComposeInput, composeCatchingUp, composeFromShown, composeFully, composeIncrementally, TAKEOVER_FROM_SHOWN_MACHINES } from './compose.js';
import type { MeshView } from './incremental.js';
import type { ComposeTrigger } from './poke.js';

/**
 * Triggers an incremental composition can answer: news (with the machines it wrote; reports change
 * only plans, read again each time), machines heard later in this replica's memory (judged again
 * from it, no read), build news (not in a composition), a plan changed, a machine
 * crossing LATE or SILENT (states are judged again at each composition), a replica joining, the
 * minute (time passing: states judged again; the reconciliation comes when it is due, `fullEveryMs`),
 * the lease taken back in the term it lapsed in (`resumed`: the view held, caught up from memory).
 * Any other — start, takeover, acted (seats, holdings, aliases, machines removed), a retry, one not
 * known — asks a full composition.
 */
export const INCREMENTAL_TRIGGERS: ReadonlySet<string> = new Set<ComposeTrigger>([
  'resumed',
  'news',
  'heard',
  'build',
  'plan',
  'state-change',
  'replica-joined',
  'minute',
]);

/** The serving replica composes from the whole store at least this often, whatever news asks: the reconciliation. */
export const FULL_COMPOSE_EVERY_MS = 60_000;

/**
 * ...unless a full composition took more than this share of that time: then the reconciliation
 * waits this many times as long as the last one took (a million machines' full composition takes
 * tens of seconds, docs/BENCHMARKS.md; every minute it would leave the incremental ones waiting).
 */
export const FULL_COMPOSE_COST_FACTOR = 10;

/** Past this many machines named since the last composition, a full composition costs less than re-reading them... */
export const INCREMENTAL_MACHINES_MAX = 20_000;

/** ...or past this share of the machines composed, whichever is more (a full read costs by the whole mesh, an incremental one by the machines named). */
export const INCREMENTAL_SHARE_MAX = 0.2;

/** The most machines an incremental composition reads again from the store: past it, a full one costs less. */
export const incrementalReadsAtMost = (composed: number): number => Math.max(INCREMENTAL_MACHINES_MAX, INCREMENTAL_SHARE_MAX * composed);

/** How long after a full composition that took `tookMs` the next is due: FULL_COMPOSE_EVERY_MS, longer for a slow one. */
export const fullEveryMs = (tookMs: number): number => Math.max(FULL_COMPOSE_EVERY_MS, FULL_COMPOSE_COST_FACTOR * tookMs);

/** The triggers of a replica taking the serving lease: at a large mesh its first composition starts from the one it followed (`composeFromShown`). */
const TAKING_OVER = /(^|,)(takeover|start|resumed)(,|$)/;

/** The trigger of the lease taken back in the term it lapsed in: the view held is caught up (`composeCatchingUp`). */
const RESUMING = /(^|,)resumed(,|$)/;

/** What one composition is to be: full, or incremental over the machines named (read again) and those heard later (judged from memory). */
export interface Step {
  full: boolean;
  machines: string[];
  heard: string[];
}

/**
 * The composer's choice between a full and an incremental composition, and the view of the mesh
 * an incremental one starts from. `ask` gathers what each request needs, `take` turns it into the
 * next composition's step, `forget` drops the view (a failed composition, a lost lease): the next
 * one is full.
 */
export interface ComposeStep {
  ask(trigger: ComposeTrigger, machines?: readonly string[]): void;
  take(): Step;
  compose(step: Step, input: ComposeInput): Promise<Composition>;
  /**
   * The machines of `heard` the view holds heard earlier than `lastMs` says: those a composition
   * would change. A machine not held yet (a first beat) comes with the news that writes it.
   */
  heardLater(heard: readonly string[], lastMs: (machine: string) => number | undefined): string[];
  /** When a machine of the last composition next crosses LATE or SILENT, found while composing it; undefined when none will or it failed. */
  crossing(): Date | undefined;
  /** Drops the view: the next composition is full (or, taking over a large mesh, from the one followed). */
  forget(): void;
  /** The lease lapsed: the view is kept aside, taken up again by `resume`, dropped by `forget`. */
  lapse(): void;
  /** The lease taken back in the term it lapsed in: the view kept aside is the view again. */
  resume(): void;
}

export function composeStep(db: Kysely<DB>, now: () => number = Date.now): ComposeStep {
  let view: MeshView | undefined;
  /** The view held when the lease lapsed: no other replica composed past it if the lease comes back in the same term. */
  let lapsed: MeshView | undefined;
  let lastFullAt = 0;
  let lastFullTookMs = 0;
  let fullAsked = false;
  const touched = new Set<string>();
  // Bounded by the mesh: each machine once.
  const heardLater = new Set<string>();
  return {
    ask(trigger, machines) {
      if (fullAsked) return;
      if (trigger === 'heard') {
        for (const m of machines ?? []) heardLater.add(m);
        return;
      }
      if (!INCREMENTAL_TRIGGERS.has(trigger) || (trigger === 'news' && !machines)) {
        fullAsked = true;
        touched.clear();
        heardLater.clear();
        return;
      }
      for (const m of machines ?? []) touched.add(m);
      if (touched.size > incrementalReadsAtMost(view?.size ?? 0)) {
        fullAsked = true;
        touched.clear();
        heardLater.clear();
      }
    },
    take() {
      const full = fullAsked || !view || now() - lastFullAt >= fullEveryMs(lastFullTookMs);
      const step = { full, machines: full ? [] : [...touched], heard: full ? [] : [...heardLater] };
      fullAsked = false;
      touched.clear();
      heardLater.clear();
      return step;
    },
    async compose(step, input) {
      const shown = input.shown;
      if (view && !step.full && RESUMING.test(input.trigger)) {
        const startedAt = now();
        const composed = await composeCatchingUp(db, view, input, incrementalReadsAtMost, step.machines);
        view = composed.view;
        if (composed.whole) {
          lastFullAt = startedAt;
          lastFullTookMs = now() - startedAt;
        }
        return composed.composition;
      }
      if (!view && shown?.seats && shown.machines.length >= TAKEOVER_FROM_SHOWN_MACHINES && TAKING_OVER.test(input.trigger)) {
        const startedAt = now();
        const composed = await composeFromShown(db, { machines: shown.machines, seats: shown.seats }, input, incrementalReadsAtMost);
        view = composed.view;
        // From what was shown, the reconciliation comes as after a quick full composition
        // (FULL_COMPOSE_EVERY_MS on); read whole, as after any full one (fullEveryMs of its time).
        lastFullAt = startedAt;
        lastFullTookMs = composed.whole ? now() - startedAt : 0;
        return composed.composition;
      }
      if (step.full || !view) {
        view = undefined;
        const startedAt = now(); // from its start: the minute's full composition is not followed by a second one
        const composed = await composeFully(db, input);
        view = composed.view;
        lastFullAt = startedAt;
        lastFullTookMs = now() - startedAt;
        return composed.composition;
      }
      return composeIncrementally(db, view, step.machines, input, step.heard);
    },
    heardLater(heard, lastMs) {
      if (!view) return [];
      return heard.filter((machine) => {
        const ms = lastMs(machine);
        return ms !== undefined && view!.heardBefore(machine, ms);
      });
    },
    crossing() {
      const at = view?.crossingMs;
      return at === undefined ? undefined : new Date(at);
    },
    forget() {
      view = undefined;
      lapsed = undefined;
    },
    lapse() {
      lapsed = view ?? lapsed;
      view = undefined;
    },
    resume() {
      view ??= lapsed;
      lapsed = undefined;
    },
  };
}

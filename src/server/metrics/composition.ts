import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Mesh } from '../../services/mesh.js';
import type { Composer } from '../../services/status/composing/composer.js';
import type { Composition } from '../../services/status/composition.js';
import { countStates, type StateCounts } from '../../services/status/looking-back/counts.js';
import { readCounter, readGauge } from './read.js';

/** Compose times (seconds) the histogram tells apart: a composition takes milliseconds at 1,000 machines, tens at 10,000. */
const COMPOSE_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** The machine states and plan states counted: each is shown, 0 included, once a composition is heard. */
const MACHINE_STATES = ['UP', 'LATE', 'SILENT'] as const;
/** Each state's field in `countStates`' counts. */
const STATE_COUNT: Record<(typeof MACHINE_STATES)[number], keyof StateCounts> = { UP: 'up', LATE: 'late', SILENT: 'silent' };
const PLAN_STATES = ['QUEUED', 'OPEN', 'STOPPED'] as const;

/** Takes in one composition heard (its figures are observed as it comes, not read at scrape time). */
export type CompositionHeard = (composition: Composition) => void;

/**
 * The compositions: how many this replica composed (read from the composer's stats), and what the
 * last one heard holds (observed as it is heard, or read from the feed at scrape time). Answers
 * the listener that observes each composition heard.
 */
export function compositionMetrics(registry: Registry, mesh: Pick<Mesh, 'status' | 'views'>, composer: Composer['stats'] | undefined): CompositionHeard {
  const current = () => mesh.status.current();
  readCounter(
    registry,
    'mesh_compositions_total',
    'Compositions this replica composed (it composes while it holds the serving lease).',
    () => composer?.compositions,
  );
  readCounter(registry, 'mesh_composition_failures_total', 'Compositions this replica tried and failed (the store away, mostly).', () => composer?.failures);
  const sized = sizesHeard(registry);
  readGauge(registry, 'mesh_composition_seq', 'The seq of the last composition heard.', () => current()?.seq);
  readGauge(registry, 'mesh_composition_age_seconds', 'Seconds since the last composition heard was composed.', () => {
    const at = current()?.composedAt;
    return at ? (Date.now() - Date.parse(at)) / 1000 : undefined;
  });
  const counted = statesHeard(registry);
  readGauge(registry, 'mesh_hand_acts_week', 'Hand-acts of the last 7 days, as the last composition counted them.', () => current()?.handActsThisWeek);
  readGauge(registry, 'mesh_hand_acts_kept', "Hand-acts in this replica's view of the hand-act bucket.", () => mesh.views.handActs.size);
  readGauge(registry, 'mesh_repeated_causes', 'Causes given to more than one hand-act this week.', () => current()?.repeatedCauses.length);
  return (composition) => {
    sized(composition);
    counted(composition);
  };
}

/** Each composition heard counted, its compose time and the length of each of its lists. */
function sizesHeard(registry: Registry): CompositionHeard {
  const heard = new Counter({ name: 'mesh_compositions_heard_total', help: 'Compositions this replica heard on the status subject.', registers: [registry] });
  const composeTime = new Histogram({
    name: 'mesh_compose_seconds',
    help: 'How long each composition heard took to compose (its tookMs).',
    buckets: COMPOSE_BUCKETS_S,
    registers: [registry],
  });
  const size = new Gauge({
    name: 'mesh_composition_items',
    help: 'Items in the last composition heard, by list.',
    labelNames: ['list'],
    registers: [registry],
  });
  return (composition) => {
    heard.inc();
    composeTime.observe(composition.tookMs / 1000);
    size.set({ list: 'machines' }, composition.machines.length);
    size.set({ list: 'seats' }, composition.seats.length);
    size.set({ list: 'plans' }, composition.plans.length);
    size.set({ list: 'unheldSeats' }, composition.unheldSeats.length);
  };
}

/** The last composition heard's plans and machines, by state. */
function statesHeard(registry: Registry): CompositionHeard {
  const plans = new Gauge({ name: 'mesh_plans', help: 'Plans in the last composition heard, by state.', labelNames: ['state'], registers: [registry] });
  const machines = new Gauge({
    name: 'mesh_machines',
    help: 'Machines in the last composition heard, by state.',
    labelNames: ['state'],
    registers: [registry],
  });
  return (composition) => {
    const counts = countStates(composition.machines);
    for (const state of MACHINE_STATES) machines.set({ state }, counts[STATE_COUNT[state]]);
    const byState = new Map<string, number>(PLAN_STATES.map((state) => [state, 0]));
    for (const plan of composition.plans) byState.set(plan.state, (byState.get(plan.state) ?? 0) + 1);
    for (const [state, count] of byState) plans.set({ state }, count);
  };
}

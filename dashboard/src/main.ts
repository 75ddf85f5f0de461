import './style.css';
import { query, Refused, token } from './api.js';
import { byId } from './dom.js';
import {
  DashboardCallsDocument,
  DashboardDurationsDocument,
  DashboardHandActsDocument,
  DashboardPlansDocument,
  type DashboardHandActFragment as HandActRow,
  type MachineState,
  type DashboardRunningCallFragment as RunningCall,
  type DashboardStatusFragment as Status,
  type DashboardDeltaFragment as StatusDelta,
} from './generated/graphql.js';
import { type Connection, followStatus } from './live.js';
import { LookBack } from './look-back.js';
import { MachineGrid } from './machines.js';
import { type Applies, renderCalls, renderComposition, renderDurations, renderHandActs, renderPlans, SeatTable } from './panels.js';
import { SideLive } from './side-live.js';
import { readView } from './view.js';

/** A composition older than twice the gateway's minute tick means the page is behind. */
const BEHIND_AFTER_MS = 120_000;
/** Side lists (applies, calls, hand-acts) are fetched at most this often, however fast compositions come. */
const SIDE_FETCH_GAP_MS = 1_000;
const WEEK_MS = 7 * 86_400_000;
const MEASURES_KEPT = 2_000;

const endpoint = new URL('./graphql', location.href).toString();
const machines = new MachineGrid();
const seats = new SeatTable();
let applies: Applies = new Map();
let handActs: HandActRow[] | undefined;
let runningCalls: RunningCall[] = [];

const connection = byId('connection');
const tokenPanel = byId('token');
const tokenMessage = byId('token-message');

function showConnection(state: Connection, detail?: string): void {
  connection.dataset.state = state;
  connection.className = `conn ${state}`;
  connection.textContent = { connecting: 'connecting…', live: '● live', reconnecting: 'disconnected · reconnecting…', refused: 'token refused' }[state];
  document.body.classList.toggle('stale', state !== 'live');
  if (state === 'refused') askForToken(detail ?? 'this gateway needs a token');
  else if (state === 'live') tokenPanel.hidden = true;
}

/** What the person reads when the gateway refused the token given, with its reason when it said one. */
function refusedMessage(reason: string): string {
  return `the gateway refused this token${reason ? `: ${reason}` : ''}`;
}

function askForToken(message: string): void {
  tokenPanel.hidden = false;
  tokenMessage.hidden = false;
  tokenMessage.textContent = message;
  byId<HTMLInputElement>('token-input').focus();
}

/** Runs `fetcher` now or once the gap since the last run has passed; calls in between collapse into one. */
function throttled(fetcher: () => Promise<void>): () => void {
  let last = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const run = () => {
    timer = undefined;
    last = Date.now();
    fetcher().catch((error) => {
      if (error instanceof Refused) askForToken(token.get() ? refusedMessage(error.message) : 'this gateway needs a token');
    });
  };
  return () => {
    if (timer) return;
    timer = setTimeout(run, Math.max(0, last + SIDE_FETCH_GAP_MS - Date.now()));
  };
}

const side = new SideLive({
  onApplies: (planId, planApplies) => {
    applies.set(planId, planApplies);
    const held = live.held();
    if (held) renderPlans(held.plans, applies);
    // A report or a tier ending records a duration.
    fetchDurations();
  },
  onCalls: (running) => {
    runningCalls = running;
    renderCalls(live.held()?.callsRunning ?? 0, running);
  },
  onHandActs: (acts) => {
    handActs = acts;
    const held = live.held();
    if (held) renderHandActs(held.handActsThisWeek, held.repeatedCauses, handActs);
  },
});

const fetchApplies = throttled(async () => {
  const data = await query(endpoint, DashboardPlansDocument);
  applies = new Map(data.plans.map((p) => [p.id, p.applies]));
  const held = live.held();
  if (held) renderPlans(held.plans, applies);
});
const fetchCalls = throttled(async () => {
  const data = await query(endpoint, DashboardCallsDocument);
  side.seedCalls(data.calls.edges.map((e) => e.node));
});
const fetchHandActs = throttled(async () => {
  const data = await query(endpoint, DashboardHandActsDocument, { since: new Date(Date.now() - WEEK_MS).toISOString() });
  side.seedHandActs(data.handActs.edges.map((e) => e.node));
});
const fetchDurations = throttled(async () => {
  const data = await query(endpoint, DashboardDurationsDocument);
  renderDurations(data.durations);
});

function onFull(status: Status): void {
  if (!lookBack.viewingPast()) machines.replace(status.machines);
  lookBack.heard(status, machines.counts());
  seats.replace(status.seats);
  renderPlans(status.plans, applies);
  renderHandActs(status.handActsThisWeek, status.repeatedCauses, handActs);
  renderComposition(status, BEHIND_AFTER_MS);
  fetchApplies();
  fetchCalls();
  fetchHandActs();
  fetchDurations();
}

const changed = (list: { added: unknown[]; changed?: unknown[]; removed: unknown[]; order: unknown[] | null }) =>
  list.added.length > 0 || (list.changed?.length ?? 0) > 0 || list.removed.length > 0 || list.order !== null;

/**
 * A delta updates only the parts it names. Applies, calls and hand-acts come by their own
 * subscriptions (side-live.ts): nothing here asks the gateway again, except durations when
 * something that records one happened (a machine heard again after a gap, a build's news).
 */
function onDelta(delta: StatusDelta, status: Status): void {
  const past = lookBack.viewingPast();
  // A machine back UP had a late heartbeat: a heartbeat_gap duration was recorded. (The grid
  // holds the states before this delta; while it shows the past, the next full view catches up.)
  const back = !past && delta.machines.changed?.some((m) => m.state === 'UP' && (machines.stateOf(m.name) ?? 'UP') !== 'UP');
  if (changed(delta.machines) && !past) machines.apply(delta.machines);
  lookBack.heard(status, past ? countStates(status) : machines.counts());
  if (changed(delta.seats)) seats.apply(delta.seats, status.seats);
  if (changed(delta.plans)) renderPlans(status.plans, applies);
  if (changed(delta.plans) || back || delta.trigger.includes('build')) fetchDurations();
  if (delta.callsRunning !== null) renderCalls(status.callsRunning, runningCalls);
  if (delta.handActsThisWeek !== null || changed(delta.repeatedCauses)) renderHandActs(status.handActsThisWeek, status.repeatedCauses, handActs);
  renderComposition(status, BEHIND_AFTER_MS);
}

/** The live composition's counts while the grid shows the past (then it does not count them). */
function countStates(status: Status): Record<MachineState, number> {
  const counts = { UP: 0, LATE: 0, SILENT: 0 };
  for (const m of status.machines) counts[m.state]++;
  return counts;
}

/** Measures each update as `mesh:full` / `mesh:delta` (User Timing), which the dashboard bench reads; bounded. */
function timed<A extends unknown[]>(name: string, update: (...args: A) => void): (...args: A) => void {
  return (...args) => {
    const start = performance.now();
    update(...args);
    if (performance.getEntriesByType('measure').length >= MEASURES_KEPT) performance.clearMeasures();
    performance.measure(name, { start, end: performance.now() });
  };
}

const live = followStatus({
  url: endpoint.replace(/^http/, 'ws'),
  token: token.get,
  onFull: timed('mesh:full', onFull),
  onDelta: timed('mesh:delta', onDelta),
  onConnection: showConnection,
  onSocket: (socket) => side.follow(socket),
});

const lookBack = new LookBack({
  endpoint,
  machines,
  live: () => live.held(),
  onRefused: () => askForToken(token.get() ? 'the gateway refused this token' : 'this gateway needs a token'),
});
lookBack.start(readView());

byId<HTMLFormElement>('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = byId<HTMLInputElement>('token-input');
  if (!input.value.trim()) return;
  token.set(input.value.trim());
  input.value = '';
  tokenMessage.hidden = true;
  live.restart();
});

setInterval(() => renderComposition(live.held(), BEHIND_AFTER_MS), 1_000);

import './style.css';
import { diffList } from '../../src/services/status/delta/lists.js';
import { query, Refused, token } from './api.js';
import { byId } from './dom.js';
import {
  DashboardCallsDocument,
  DashboardDurationsDocument,
  DashboardHandActsDocument,
  DashboardPastDocument,
  DashboardPastSiteDocument,
  DashboardPastSitesDocument,
  DashboardPlansDocument,
  DashboardSizeDocument,
  type DashboardHandActFragment as HandActRow,
  type MachineState,
  type DashboardMachineFragment as MachineStatus,
  type DashboardPlanFragment as PlanStatus,
  type DashboardCauseFragment as RepeatedCause,
  type DashboardRunningCallFragment as RunningCall,
  type DashboardSiteCountFragment as SiteCount,
  type DashboardStatusFragment as Status,
  type DashboardDeltaFragment as StatusDelta,
} from './generated/graphql.js';
import { type Connection, followSites, followStatus, type SiteStatus, type SitesStatus } from './live.js';
import { LookBack, type Past } from './look-back.js';
import { MachineGrid, NO_SITE, renderCounts } from './machines.js';
import { type Applies, renderCalls, renderComposition, renderDurations, renderHandActs, renderPlans, SeatTable } from './panels.js';
import { SideLive } from './side-live.js';
import { isLarge, LARGE_MESH_EVERY_MS, largeMeshFrom, SiteTable } from './sites.js';
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

/** What the side panels read of the composition followed, whole or the large mesh's counts. */
interface Held extends Pick<Status, 'seq' | 'composedAt' | 'heardUntil' | 'tookMs'> {
  plans: PlanStatus[];
  callsRunning: number;
  handActsThisWeek: number;
  repeatedCauses: RepeatedCause[];
}

/** What the page follows, once the counts by site said how large the mesh is: the whole composition, or the large mesh's view. */
let live: { restart(): void; held(): Held | undefined } = { restart: () => undefined, held: () => undefined };
/** Whether the size was not known when the page chose (the gateway refused the page or was away): a token given asks again. */
let choseBlind = false;

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
function countStates(status: Pick<Status, 'machines'>): Record<MachineState, number> {
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

/**
 * A mesh that grew past the large mesh's size while the page followed it whole (opened on a
 * gateway that had heard few machines yet, say) is not followed whole on to a million: the page
 * starts over, and the counts by site then say it is large. Not when the page chose without the
 * counts (the token's path decides that).
 */
function startOverIfGrownLarge(status: Status): void {
  if (!choseBlind && status.machines.length >= largeMeshFrom()) location.reload();
}

/** The whole composition followed over `statusChanges`: the page below the large mesh's size, as it always was. */
function followWhole(): void {
  const whole = followStatus({
    url: endpoint.replace(/^http/, 'ws'),
    token: token.get,
    onFull: timed('mesh:full', (status: Status) => {
      onFull(status);
      startOverIfGrownLarge(status);
    }),
    onDelta: timed('mesh:delta', (delta: StatusDelta, status: Status) => {
      onDelta(delta, status);
      startOverIfGrownLarge(status);
    }),
    onConnection: showConnection,
    onSocket: (socket) => side.follow(socket),
  });
  live = whole;
  pastOf = async (at) => {
    const past = (await query(endpoint, DashboardPastDocument, { at })).statusAt;
    return past && { ...past, show: () => machines.replace(past.machines) };
  };
  liveAgain = () => machines.replace(whole.held()?.machines ?? []);
  filterBy = (text, state) => machines.setFilter(text, state);
}

// The large mesh's view (sites.ts): the counts by site first, a site's machines once it is opened.
const siteTable = new SiteTable();
const siteOpenPanel = byId('site-open');
const siteOpenText = byId('site-open-text');
const largeNote = byId('large-mesh');
const totalsEl = byId('machine-counts');
/** The site open (null: the machines of no site; undefined: none, the table of sites shown). */
let siteOpen: string | null | undefined;
/** The open site's machines as the live view last drew them; undefined until its first message. */
let siteShown: readonly MachineStatus[] | undefined;
/** The last plans and causes drawn: the counts' messages repeat them a second apart, drawn again only when changed. */
let plansDrawn = '';
let handActsDrawn = '';

const totalsOf = (sites: readonly SiteCount[]): Record<MachineState, number> => {
  const totals = { UP: 0, LATE: 0, SILENT: 0 };
  for (const s of sites) {
    totals.UP += s.up;
    totals.LATE += s.late;
    totals.SILENT += s.silent;
  }
  return totals;
};

/** Each composition's counts by site: the table (unless it shows the past), the totals, the timeline and the side panels. */
function onSites(status: SitesStatus): void {
  const first = plansDrawn === '';
  const totals = totalsOf(status.sites);
  if (!lookBack.viewingPast()) {
    siteTable.render(status.sites, status.sitesUnlisted);
    renderCounts(totalsEl, totals);
  }
  lookBack.heard(status, totals);
  const machinesInAll = totals.UP + totals.LATE + totals.SILENT;
  largeNote.textContent = `${machinesInAll.toLocaleString('en')} machines over ${(status.sites.length + status.sitesUnlisted).toLocaleString('en')} sites: counted by site; open a site to see its machines.`;
  const plans = JSON.stringify(status.plans);
  if (plans !== plansDrawn) renderPlans(status.plans, applies);
  plansDrawn = plans;
  const acts = JSON.stringify([status.handActsThisWeek, status.repeatedCauses]);
  if (acts !== handActsDrawn) renderHandActs(status.handActsThisWeek, status.repeatedCauses, handActs);
  handActsDrawn = acts;
  renderCalls(status.callsRunning, runningCalls);
  renderComposition(status, BEHIND_AFTER_MS);
  if (!first) return;
  fetchApplies();
  fetchCalls();
  fetchHandActs();
  fetchDurations();
}

/** Each composition's machines of the site open: its grid drawn whole the first time, then only the cells that changed. */
function onSite(site: string | null, status: SiteStatus): void {
  if (site !== siteOpen) return;
  const before = siteShown;
  siteShown = status.machines;
  if (lookBack.viewingPast()) return;
  if (before === undefined) machines.replace(status.machines);
  else machines.apply(diffList(before, status.machines, (m) => m.name));
}

/** Opens a site of the large mesh's view (its grid, followed live), or none (the table of sites). */
function openSite(site: string | null | undefined): void {
  if (site === siteOpen) return;
  siteOpen = site;
  siteShown = undefined;
  large?.open(site);
  machines.replace([]);
  siteTable.show(site === undefined);
  siteOpenPanel.hidden = site === undefined;
  siteOpenText.textContent = site === undefined ? '' : `${site ?? NO_SITE}: its machines, live`;
  lookBack.viewSite(site === undefined ? undefined : (site ?? NO_SITE));
}

let large: ReturnType<typeof followSites> | undefined;

/** The large mesh's view: the counts by site followed, a site's machines when opened; the seats table is not followed. */
function followLarge(site: string | undefined): void {
  large = followSites({
    url: endpoint.replace(/^http/, 'ws'),
    token: token.get,
    everyMs: LARGE_MESH_EVERY_MS,
    onSites: timed('mesh:sites', onSites),
    onSite: timed('mesh:site', onSite),
    onConnection: showConnection,
    onSocket: (socket) => side.follow(socket),
  });
  live = large;
  document.body.classList.add('large-mesh');
  machines.showTotals(false);
  largeNote.hidden = false;
  byId('seats').hidden = true;
  byId('seats-large').hidden = false;
  siteTable.onOpen = openSite;
  byId('back-to-sites').addEventListener('click', () => openSite(undefined));
  siteTable.show(true);
  if (site !== undefined) openSite(site === NO_SITE ? null : site);
  pastOf = async (at) => {
    const asked = siteOpen;
    if (asked !== undefined) {
      const past = (await query(endpoint, DashboardPastSiteDocument, { at, site: asked })).statusAt;
      return past && { ...past, show: () => machines.replace(past.machines) };
    }
    const past = (await query(endpoint, DashboardPastSitesDocument, { at })).statusAt;
    return (
      past && {
        ...past,
        show: () => {
          siteTable.render(past.sites, past.sitesUnlisted);
          renderCounts(totalsEl, totalsOf(past.sites));
        },
      }
    );
  };
  liveAgain = () => {
    if (siteOpen !== undefined) return void machines.replace(siteShown ? [...siteShown] : []);
    const held = large?.held();
    if (!held) return;
    siteTable.render(held.sites, held.sitesUnlisted);
    renderCounts(totalsEl, totalsOf(held.sites));
  };
  filterBy = (text, state) => {
    const sitesLeave = siteTable.setFilter(text, state);
    const gridLeaves = machines.setFilter(text, state);
    return siteOpen === undefined ? sitesLeave : gridLeaves;
  };
}

/** How the look back asks the past, shows the live mesh again and filters: set by the view chosen. */
let pastOf: (at: string) => Promise<Past | null> = async () => null;
let liveAgain: () => void = () => undefined;
let filterBy: (text: string, state: MachineState | '') => number = () => 0;

const lookBack = new LookBack({
  endpoint,
  machines,
  filter: (text, state) => filterBy(text, state),
  past: (at) => pastOf(at),
  showLive: () => liveAgain(),
  onRefused: () => askForToken(token.get() ? 'the gateway refused this token' : 'this gateway needs a token'),
});

/** Whether the counts by site say this mesh is large; undefined when they could not be read (no token, the gateway away). */
async function meshIsLarge(): Promise<boolean | undefined> {
  try {
    const size = await query(endpoint, DashboardSizeDocument);
    return isLarge(size.status, largeMeshFrom());
  } catch {
    return undefined;
  }
}

/**
 * The page asks the counts by site first (one small query, answered from the composition): past
 * the large mesh's size it follows them and draws a table of sites; below it, or when they could
 * not be read, the whole composition as always.
 */
async function begin(): Promise<void> {
  const view = readView();
  const largeMesh = await meshIsLarge();
  choseBlind = largeMesh === undefined;
  if (largeMesh) followLarge(view.site);
  else followWhole();
  lookBack.start(view);
}
void begin();

byId<HTMLFormElement>('token-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = byId<HTMLInputElement>('token-input');
  if (!input.value.trim()) return;
  token.set(input.value.trim());
  input.value = '';
  tokenMessage.hidden = true;
  if (!choseBlind) return live.restart();
  // The page chose without the counts: with the token they may say the mesh is large, and the page starts over as such.
  void meshIsLarge().then((largeMesh) => {
    if (largeMesh) location.reload();
    else {
      choseBlind = largeMesh === undefined;
      live.restart();
    }
  });
});

setInterval(() => renderComposition(live.held(), BEHIND_AFTER_MS), 1_000);

import { query, Refused } from './api.js';
import { byId, clock, el } from './dom.js';
import { DashboardCountsDocument, DashboardMachineHistoryDocument, type MachineState } from './generated/graphql.js';
import { machineHistoryStrip } from './history-strip.js';
import type { MachineGrid } from './machines.js';
import { Timeline } from './timeline.js';
import { type View, writeView } from './view.js';

/** What the page shows of the mesh at an instant, once asked: `show` draws it, unless a newer look back was asked meanwhile. */
export interface Past {
  seq: number;
  composedAt: string;
  show(): void;
}

export interface LookBackOptions {
  endpoint: string;
  machines: MachineGrid;
  /** Narrows what the page shows (the grid; the sites too in the large mesh's view); answers how many machines it leaves. */
  filter(text: string, state: MachineState | ''): number;
  /** Asks the mesh as it was at `at` (the whole grid, or the large mesh's sites or site open); null when nothing is kept then. */
  past(at: string): Promise<Past | null>;
  /** Shows the live mesh again. */
  showLive(): void;
  onRefused(): void;
}

/** Filter keystrokes are measured (User Timing `mesh:filter`), which the dashboard bench reads; bounded like the others. */
const MEASURES_KEPT = 2_000;

/**
 * The page looking back: the timeline of UP / LATE / SILENT, the grid shown as it was at a chosen
 * instant (`statusAt`) under a banner with one click back to live, a chosen machine's history as a
 * strip of its states (`machineHistory`), and the filter; the view (instant, machine, filter) is
 * kept in the address. Each look back is one request when asked; nothing is polled.
 */
export class LookBack {
  private view: View = {};
  private readonly timeline: Timeline;
  private readonly banner = byId('viewing-past');
  private readonly bannerText = byId('viewing-past-text');
  private readonly history = byId('machine-history');
  private readonly filterText = byId<HTMLInputElement>('machine-filter');
  private readonly filterState = byId<HTMLSelectElement>('machine-state-filter');
  private readonly filterCount = byId('filter-count');
  /** Each look back asked is numbered: an answer to an older one is dropped. */
  private asked = 0;

  constructor(private readonly options: LookBackOptions) {
    this.timeline = new Timeline(byId('timeline-panel'), (at) => void this.showPast(at));
    byId('back-to-live').addEventListener('click', () => this.backToLive());
    const onFilter = () => {
      const start = performance.now();
      this.view.q = this.filterText.value || undefined;
      this.view.state = (this.filterState.value || undefined) as MachineState | undefined;
      this.showFiltered(options.filter(this.filterText.value, (this.filterState.value || '') as MachineState | ''));
      if (performance.getEntriesByType('measure').length >= MEASURES_KEPT) performance.clearMeasures();
      performance.measure('mesh:filter', { start, end: performance.now() });
      writeView(this.view);
    };
    this.filterText.addEventListener('input', onFilter);
    this.filterState.addEventListener('change', onFilter);
    options.machines.onSelect = (name) => {
      this.view.machine = name;
      writeView(this.view);
      void this.showHistory(name);
    };
  }

  /** Shows the view a link gave (or the plain page), and asks the history for the timeline once. */
  start(view: View): void {
    this.view = { ...view };
    this.filterText.value = view.q ?? '';
    this.filterState.value = view.state ?? '';
    if (view.q || view.state) this.showFiltered(this.options.filter(view.q ?? '', view.state ?? ''));
    if (view.machine) this.options.machines.choose(view.machine);
    if (view.at) void this.showPast(view.at);
    void this.guard(async () => {
      const data = await query(this.options.endpoint, DashboardCountsDocument);
      this.timeline.load(data.statusCounts);
      this.timeline.mark(this.view.at);
    });
  }

  /** How many machines the filter leaves, beside it (nothing when no filter is set). */
  private showFiltered(shown: number): void {
    const filtering = !!(this.filterText.value.trim() || this.filterState.value);
    this.filterCount.textContent = filtering ? `${shown} shown` : '';
  }

  viewingPast(): boolean {
    return this.view.at !== undefined;
  }

  /** The site open in the large mesh's view, kept in the address (undefined: none, the table of sites). */
  viewSite(site: string | undefined): void {
    this.view.site = site;
    writeView(this.view);
    if (this.view.at) void this.showPast(this.view.at);
  }

  /** Each live composition: its counts extend the timeline. */
  heard(status: { composedAt: string }, counts: Readonly<Record<MachineState, number>>): void {
    this.timeline.live({ at: status.composedAt, up: counts.UP, late: counts.LATE, silent: counts.SILENT });
  }

  /** The grid as the mesh was at `at`, under the banner; the live composition keeps being followed aside. */
  async showPast(at: string): Promise<void> {
    const mine = ++this.asked;
    this.view.at = at;
    writeView(this.view);
    this.timeline.mark(at);
    this.banner.hidden = false;
    this.bannerText.textContent = `Looking up the mesh at ${clock(at)}…`;
    await this.guard(
      async () => {
        const past = await this.options.past(at);
        if (mine !== this.asked || this.view.at !== at) return;
        if (!past) {
          this.bannerText.textContent = `Nothing kept at ${clock(at)}: the history does not reach back that far.`;
          return;
        }
        past.show();
        this.bannerText.textContent = `Viewing the past: the mesh at ${clock(at)} (composition ${past.seq}, composed ${clock(past.composedAt)}). Live changes are not shown.`;
        this.banner.dataset.seq = String(past.seq);
      },
      (message) => {
        if (mine === this.asked) this.bannerText.textContent = `The mesh at ${clock(at)} could not be shown: ${message}`;
      },
    );
  }

  /** One click back to live: the page shows the live composition again. */
  backToLive(): void {
    this.asked++;
    this.view.at = undefined;
    writeView(this.view);
    this.banner.hidden = true;
    delete this.banner.dataset.seq;
    this.timeline.mark(undefined);
    this.options.showLive();
  }

  private async showHistory(name: string | undefined): Promise<void> {
    if (!name) {
      this.history.replaceChildren();
      return;
    }
    this.history.replaceChildren(el('p', 'muted', `${name}: reading its history…`));
    await this.guard(
      async () => {
        const data = await query(this.options.endpoint, DashboardMachineHistoryDocument, { name });
        if (this.view.machine !== name) return;
        const answer = data.machineHistory;
        if (!('data' in answer)) return void this.history.replaceChildren(el('p', 'muted', answer.message));
        this.history.replaceChildren(el('h4', undefined, `${name} over the kept history`), machineHistoryStrip(name, answer.data));
      },
      (message) => this.history.replaceChildren(el('p', 'muted', `${name}'s history could not be read: ${message}`)),
    );
  }

  private async guard(work: () => Promise<void>, failed?: (message: string) => void): Promise<void> {
    try {
      await work();
    } catch (error) {
      if (error instanceof Refused) this.options.onRefused();
      else failed?.(error instanceof Error ? error.message : String(error));
    }
  }
}

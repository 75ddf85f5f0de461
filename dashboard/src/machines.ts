import type { ListChangesIn } from '../../src/services/status/delta/lists.js';
import { ago, byId, clock, el } from './dom.js';
import type { MachineState, DashboardMachineFragment as MachineStatus } from './generated/graphql.js';

const STATES: MachineState[] = ['UP', 'LATE', 'SILENT'];
/** How the machines of no site are named on the page (never a site's name: names hold no parentheses). */
export const NO_SITE = '(no site)';
type Counts = Record<MachineState, number>;
const zero = (): Counts => ({ UP: 0, LATE: 0, SILENT: 0 });

interface Site {
  name: string;
  section: HTMLElement;
  grid: HTMLElement;
  counts: Counts;
  countsEl: HTMLElement;
  /** Machine names in order, for inserting a new one where it belongs. */
  names: string[];
}

/** The first index in sorted `list` whose value is not below `name`. */
function lowerBound(list: string[], name: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((list[mid] as string) < name) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Writes UP / LATE / SILENT badges, each with its figure in `data-count` (what the tests and a person read). */
export function renderCounts(target: HTMLElement, counts: Counts): void {
  target.replaceChildren(
    ...STATES.map((state) => {
      const badge = el('span', `count ${state}`, `${counts[state]} ${state}`);
      badge.dataset.state = state;
      badge.dataset.count = String(counts[state]);
      return badge;
    }),
  );
}

/**
 * The machines as a grid grouped by site, one cell per machine coloured by state, with counts per
 * site and in all. A delta touches only the cells it names (and the counts they move): no full
 * re-render per composition, which keeps a 10,000-machine page responsive.
 */
export class MachineGrid {
  private readonly machines = new Map<string, MachineStatus>();
  private readonly cells = new Map<string, HTMLElement>();
  private readonly sites = new Map<string, Site>();
  private totals = zero();
  private selected: string | undefined;
  /** Whether the grid writes its counts as the mesh's totals (the large mesh's view writes the sites' instead). */
  private totalsShown = true;
  /** What the grid shows: every machine whose name or site holds `text` and whose state is `state`, when given. */
  private filter: { text: string; state: MachineState | '' } = { text: '', state: '' };
  /** Told of each machine chosen (undefined: none), by a click or `choose`. */
  onSelect: ((name: string | undefined) => void) | undefined;
  private readonly root = byId('sites');
  private readonly totalsEl = byId('machine-counts');
  private readonly detail = byId('machine-detail');

  constructor() {
    // The tooltip is written when a cell is pointed at, not for every cell at every composition.
    this.root.addEventListener('mouseover', (event) => {
      const cell = (event.target as HTMLElement).closest<HTMLElement>('.m');
      const m = cell?.dataset.name ? this.machines.get(cell.dataset.name) : undefined;
      if (cell && m) cell.title = `${m.name} · ${m.state} · heard ${clock(m.lastHeardAt)}`;
    });
    this.root.addEventListener('click', (event) => {
      const cell = (event.target as HTMLElement).closest<HTMLElement>('.m');
      if (cell?.dataset.name) this.select(cell.dataset.name);
    });
  }

  /** The state a machine is shown in, if shown. */
  stateOf(name: string): MachineState | undefined {
    return this.machines.get(name)?.state;
  }

  /** How many machines each state holds, in all. */
  counts(): Readonly<Record<MachineState, number>> {
    return this.totals;
  }

  /** The large mesh's view shows one site in the grid: the totals beside "Machines" are then the sites', not the grid's. */
  showTotals(shown: boolean): void {
    this.totalsShown = shown;
  }

  /** Chooses a machine (a link's, or the URL's), or none; not a toggle. */
  choose(name: string | undefined): void {
    if (name === this.selected) return;
    if (name === undefined) {
      if (this.selected) this.select(this.selected);
      return;
    }
    this.select(name);
  }

  /**
   * Narrows the grid to the machines whose name or site holds `text` (any case) and in `state`
   * when given; a site left with none is hidden. Touches only the cells whose visibility moves.
   * Answers how many are shown.
   */
  setFilter(text: string, state: MachineState | ''): number {
    this.filter = { text: text.trim().toLowerCase(), state };
    let total = 0;
    for (const site of this.sites.values()) {
      let shown = 0;
      for (const name of site.names) {
        const cell = this.cells.get(name)!;
        const visible = this.matches(this.machines.get(name)!);
        if (cell.hidden === visible) cell.hidden = !visible;
        if (visible) shown++;
      }
      const hide = shown === 0;
      if (site.section.hidden !== hide) site.section.hidden = hide;
      total += shown;
    }
    return total;
  }

  private matches(m: MachineStatus): boolean {
    const { text, state } = this.filter;
    if (state && m.state !== state) return false;
    return !text || m.name.toLowerCase().includes(text) || (m.site ?? NO_SITE).toLowerCase().includes(text);
  }

  private filtering(): boolean {
    return this.filter.text !== '' || this.filter.state !== '';
  }

  /** After a change under a filter: a site shows when any of its machines does. */
  private refreshSite(site: Site): void {
    if (!this.filtering()) {
      site.section.hidden = false;
      return;
    }
    site.section.hidden = !site.names.some((name) => !this.cells.get(name)?.hidden);
  }

  replace(machines: MachineStatus[]): void {
    this.machines.clear();
    this.cells.clear();
    this.sites.clear();
    this.totals = zero();
    this.root.replaceChildren();
    const bySite = new Map<string, MachineStatus[]>();
    for (const m of machines) {
      const site = m.site ?? NO_SITE;
      (bySite.get(site) ?? bySite.set(site, []).get(site)!).push(m);
    }
    for (const [siteName, list] of [...bySite].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const site = this.site(siteName);
      const fragment = document.createDocumentFragment();
      for (const m of list) {
        this.machines.set(m.name, m);
        const cell = this.cell(m);
        fragment.append(cell);
        site.names.push(m.name);
        site.counts[m.state]++;
        this.totals[m.state]++;
      }
      site.names.sort();
      site.grid.append(fragment);
      renderCounts(site.countsEl, site.counts);
      if (this.filtering()) this.refreshSite(site);
    }
    if (this.totalsShown) renderCounts(this.totalsEl, this.totals);
    this.refreshDetail();
  }

  apply(changes: ListChangesIn<MachineStatus>): void {
    const touched = new Set<Site>();
    for (const name of changes.removed) this.remove(name, touched);
    for (const m of changes.changed ?? []) {
      const before = this.machines.get(m.name);
      if (!before) continue;
      if ((before.site ?? NO_SITE) !== (m.site ?? NO_SITE)) {
        this.remove(m.name, touched);
        this.add(m, touched);
        continue;
      }
      const site = this.sites.get(m.site ?? NO_SITE)!;
      site.counts[before.state]--;
      site.counts[m.state]++;
      this.totals[before.state]--;
      this.totals[m.state]++;
      touched.add(site);
      this.machines.set(m.name, m);
      this.paint(this.cells.get(m.name)!, m);
    }
    for (const m of changes.added) this.add(m, touched);
    for (const site of touched) {
      renderCounts(site.countsEl, site.counts);
      if (this.filtering()) this.refreshSite(site);
    }
    if (touched.size && this.totalsShown) renderCounts(this.totalsEl, this.totals);
    if (this.selected && (changes.changed?.some((m) => m.name === this.selected) || changes.removed.includes(this.selected))) this.refreshDetail();
  }

  private site(name: string): Site {
    let site = this.sites.get(name);
    if (site) return site;
    const section = el('div', 'site');
    section.dataset.site = name;
    const head = el('div', 'site-head');
    const countsEl = el('span', 'counts');
    head.append(el('strong', undefined, name), countsEl);
    const grid = el('div', 'grid');
    section.append(head, grid);
    site = { name, section, grid, counts: zero(), countsEl, names: [] };
    this.sites.set(name, site);
    // Sites in name order, "(no site)" where its name sorts.
    const after = [...this.sites.values()].filter((s) => s.name > name).sort((a, b) => (a.name < b.name ? -1 : 1))[0];
    this.root.insertBefore(section, after?.section ?? null);
    return site;
  }

  private cell(m: MachineStatus): HTMLElement {
    const cell = el('span');
    cell.dataset.name = m.name;
    this.paint(cell, m);
    this.cells.set(m.name, cell);
    return cell;
  }

  /** Touches the cell only when its state moved: a round of heartbeats changes every machine's lastHeardAt and no cell. */
  private paint(cell: HTMLElement, m: MachineStatus): void {
    if (this.filtering()) cell.hidden = !this.matches(m);
    if (cell.dataset.state === m.state) return;
    cell.className = `m ${m.state}${m.name === this.selected ? ' selected' : ''}`;
    cell.dataset.state = m.state;
  }

  private add(m: MachineStatus, touched: Set<Site>): void {
    const site = this.site(m.site ?? NO_SITE);
    const at = lowerBound(site.names, m.name);
    const next = site.names[at];
    site.names.splice(at, 0, m.name);
    this.machines.set(m.name, m);
    site.grid.insertBefore(this.cell(m), next === undefined ? null : (this.cells.get(next) ?? null));
    site.counts[m.state]++;
    this.totals[m.state]++;
    touched.add(site);
  }

  private remove(name: string, touched: Set<Site>): void {
    const m = this.machines.get(name);
    if (!m) return;
    const site = this.sites.get(m.site ?? NO_SITE)!;
    site.names.splice(lowerBound(site.names, name), 1);
    site.counts[m.state]--;
    this.totals[m.state]--;
    this.cells.get(name)?.remove();
    this.cells.delete(name);
    this.machines.delete(name);
    touched.add(site);
    if (site.names.length === 0) {
      site.section.remove();
      this.sites.delete(site.name);
      touched.delete(site);
    }
  }

  private select(name: string): void {
    if (this.selected) this.cells.get(this.selected)?.classList.remove('selected');
    this.selected = this.selected === name ? undefined : name;
    if (this.selected) this.cells.get(this.selected)?.classList.add('selected');
    this.refreshDetail();
    this.onSelect?.(this.selected);
  }

  /** The selected machine's modules and holdings. */
  private refreshDetail(): void {
    const m = this.selected ? this.machines.get(this.selected) : undefined;
    this.detail.hidden = !m;
    if (!m) {
      this.detail.replaceChildren();
      return;
    }
    const holdings = el('ul', 'list');
    for (const h of m.holdings) holdings.append(el('li', undefined, `${h.seat} by ${h.module}${h.derived ? ' (derived)' : ' (recorded)'}`));
    if (!m.holdings.length) holdings.append(el('li', 'muted', 'holds no seat'));
    this.detail.replaceChildren(
      el('h3', `state-${m.state}`, `${m.name} · ${m.state}`),
      el('p', 'muted', `site ${m.site ?? NO_SITE} · heard ${clock(m.lastHeardAt)} (${ago(m.lastHeardAt)} ago)`),
      el('p', undefined, `modules: ${m.modules.join(', ') || '(none)'}`),
      el('h4', undefined, 'holdings'),
      holdings,
    );
  }
}

import { byId, el } from './dom.js';
import type { MachineState, DashboardSiteCountFragment as SiteCount } from './generated/graphql.js';
import { NO_SITE } from './machines.js';

/**
 * From this many machines the page draws the counts by site first and a site's grid only once it
 * is opened (the large mesh's view): every machine's cell, and every machine's changes followed,
 * is too much for a first paint at a million. Below it the page follows the whole composition.
 */
const LARGE_MESH_MACHINES = 50_000;
/** The address may set another size (`?large=3`: the sites view from 3 machines), for tests and a look at a small mesh. */
const LARGE_PARAM = 'large';
/** The large mesh's page is sent at most one composition a second, of counts and of the site open alike. */
export const LARGE_MESH_EVERY_MS = 1_000;

const STATES: MachineState[] = ['UP', 'LATE', 'SILENT'];
type Counts = Record<MachineState, number>;

/** The size from which this page shows the large mesh's view: the address's `large`, or LARGE_MESH_MACHINES. */
export function largeMeshFrom(): number {
  const asked = Number(new URLSearchParams(location.search).get(LARGE_PARAM));
  return Number.isInteger(asked) && asked > 0 ? asked : LARGE_MESH_MACHINES;
}

/** Whether counts by site say the mesh is large: as many machines as `from`, or more sites than the gateway lists. */
export function isLarge(counts: { sites: readonly SiteCount[]; sitesUnlisted: number }, from: number): boolean {
  let machines = 0;
  for (const s of counts.sites) machines += s.up + s.late + s.silent;
  return machines >= from || counts.sitesUnlisted > 0;
}

const siteName = (site: string | null) => site ?? NO_SITE;
const countOf = (s: SiteCount): Counts => ({ UP: s.up, LATE: s.late, SILENT: s.silent });

interface Row {
  row: HTMLTableRowElement;
  cells: Record<MachineState, HTMLTableCellElement>;
  count: SiteCount;
}

/**
 * The large mesh's table of sites: a row per site with its UP / LATE / SILENT counts, in the
 * gateway's order (by name, the machines of no site last). Rows are kept and only their changed
 * figures written, so a composition a second over hundreds of sites touches a few cells. A click
 * on a row opens the site; the filter narrows the rows as it narrows the grid's machines.
 */
export class SiteTable {
  private readonly root = byId('site-table');
  private readonly body = byId('site-table').querySelector('tbody')!;
  private readonly unlistedEl = byId('sites-unlisted');
  private readonly rows = new Map<string, Row>();
  private order: string[] = [];
  private filter: { text: string; state: MachineState | '' } = { text: '', state: '' };
  /** Told of the site a person opened. */
  onOpen: ((site: string | null) => void) | undefined;

  constructor() {
    this.body.addEventListener('click', (event) => {
      const row = (event.target as HTMLElement).closest<HTMLTableRowElement>('tr[data-site]');
      const count = row?.dataset.site !== undefined ? this.rows.get(row.dataset.site)?.count : undefined;
      if (count) this.onOpen?.(count.site);
    });
  }

  show(shown: boolean): void {
    this.root.hidden = !shown;
  }

  /** Each composition's counts by site; answers the mesh's totals. */
  render(sites: readonly SiteCount[], unlisted: number): Counts {
    const totals: Counts = { UP: 0, LATE: 0, SILENT: 0 };
    const order: string[] = [];
    for (const s of sites) {
      const name = siteName(s.site);
      order.push(name);
      const counts = countOf(s);
      for (const state of STATES) totals[state] += counts[state];
      const kept = this.rows.get(name);
      if (!kept) {
        this.rows.set(name, this.row(s));
        continue;
      }
      kept.count = s;
      for (const state of STATES) this.write(kept.cells[state], counts[state]);
      this.judge(kept);
    }
    if (order.length !== this.order.length || order.some((name, i) => name !== this.order[i])) {
      const present = new Set(order);
      for (const [name, row] of this.rows) {
        if (present.has(name)) continue;
        this.rows.delete(name);
        row.row.remove();
      }
      this.body.append(...order.map((name) => this.rows.get(name)!.row));
      this.order = order;
    }
    this.unlistedEl.textContent = unlisted ? `${unlisted} more sites not listed (the gateway lists ${sites.length})` : '';
    return totals;
  }

  /** Narrows the rows to the sites whose name holds `text` and that have machines in `state`; answers the machines they hold. */
  setFilter(text: string, state: MachineState | ''): number {
    this.filter = { text: text.trim().toLowerCase(), state };
    let machines = 0;
    for (const row of this.rows.values()) machines += this.judge(row);
    return machines;
  }

  /** Shows or hides a row by the filter; answers the machines it counts for it (0 when hidden). */
  private judge(row: Row): number {
    const { text, state } = this.filter;
    const counts = countOf(row.count);
    const shown = (!text || siteName(row.count.site).toLowerCase().includes(text)) && (!state || counts[state] > 0);
    if (row.row.hidden === shown) row.row.hidden = !shown;
    if (!shown) return 0;
    return state ? counts[state] : counts.UP + counts.LATE + counts.SILENT;
  }

  private write(cell: HTMLTableCellElement, value: number): void {
    const text = String(value);
    if (cell.dataset.count === text) return;
    cell.dataset.count = text;
    cell.textContent = text;
    cell.classList.toggle('none', value === 0);
  }

  private row(s: SiteCount): Row {
    const row = el('tr', 'site-row');
    row.dataset.site = siteName(s.site);
    const name = el('td', 'site-name');
    name.append(el('button', 'link', siteName(s.site)));
    row.append(name);
    const cells = {} as Record<MachineState, HTMLTableCellElement>;
    for (const state of STATES) {
      const cell = el('td', `count-cell ${state}`);
      cell.dataset.state = state;
      cells[state] = cell;
      this.write(cell, countOf(s)[state]);
      row.append(cell);
    }
    const kept = { row, cells, count: s };
    this.judge(kept);
    return kept;
  }
}

import type { Composition, MachineStatus } from './composition.js';

/**
 * A composition lists at most this many sites by name (the machines of no site beside them):
 * sites come from what agents say, and a mesh where every machine names its own would otherwise
 * make a list as long as the machines. Past it, `unlisted` counts the sites left out.
 */
export const SITES_LISTED_MAX = 10_000;

/** The machines of one site (null: of no site) counted by state, as one composition saw them. */
export interface SiteCount {
  site: string | null;
  up: number;
  late: number;
  silent: number;
}

/** A composition's counts by site: by site name in code-unit order, the machines of no site last. */
export interface SiteCounts {
  sites: SiteCount[];
  /** Sites past SITES_LISTED_MAX, left out of `sites`. */
  unlisted: number;
}

/** What is worked out of a composition at most once: it is immutable, and kept only while it is. */
const countsKept = new WeakMap<Composition, SiteCounts>();
const machinesKept = new WeakMap<Composition, Map<string | null, MachineStatus[]>>();

/** The code-unit order of site names (the kernel's `byName`, the SQL `collate "C"`), null last. */
const bySite = (a: string | null, b: string | null): number => (a === b ? 0 : a === null ? 1 : b === null ? -1 : a < b ? -1 : 1);

/**
 * Why: a page of a million machines first draws their counts by site, a few hundred rows, not
 * every machine; counted in one pass the first time a composition is asked, then kept with it, so
 * every caller and every live subscription of that composition shares the one count.
 */
export function siteCounts(composition: Composition): SiteCounts {
  const kept = countsKept.get(composition);
  if (kept) return kept;
  const bySiteName = new Map<string | null, SiteCount>();
  for (const m of composition.machines) {
    let count = bySiteName.get(m.site);
    if (!count) bySiteName.set(m.site, (count = { site: m.site, up: 0, late: 0, silent: 0 }));
    if (m.state === 'UP') count.up++;
    else if (m.state === 'LATE') count.late++;
    else count.silent++;
  }
  const all = [...bySiteName.values()].sort((a, b) => bySite(a.site, b.site));
  const noSite = all.at(-1)?.site === null ? all.pop() : undefined;
  const listed = all.slice(0, SITES_LISTED_MAX);
  const counts: SiteCounts = { sites: noSite ? [...listed, noSite] : listed, unlisted: all.length - listed.length };
  countsKept.set(composition, counts);
  return counts;
}

/**
 * Why: a site opened on a page of a million machines is sent only its machines; grouped by site in
 * one pass the first time a composition is asked (in the composition's order, by name), so each
 * further site asked of it is a lookup, not another pass over every machine.
 */
export function siteMachines(composition: Composition, site: string | null): readonly MachineStatus[] {
  let grouped = machinesKept.get(composition);
  if (!grouped) {
    grouped = new Map();
    for (const m of composition.machines) {
      const list = grouped.get(m.site);
      if (list) list.push(m);
      else grouped.set(m.site, [m]);
    }
    machinesKept.set(composition, grouped);
  }
  return grouped.get(site) ?? [];
}

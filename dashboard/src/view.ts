import type { MachineState } from './generated/graphql.js';

/** What the page shows, kept in its address so that a link shows a colleague the same: the instant, the machine, the site open, the filter. */
export interface View {
  /** An instant of the past (ISO); absent: live. */
  at?: string;
  machine?: string;
  /** The site open in the large mesh's view ("(no site)": the machines of no site). */
  site?: string;
  q?: string;
  state?: MachineState;
}

const STATES = new Set(['UP', 'LATE', 'SILENT']);

export function readView(): View {
  const params = new URLSearchParams(location.search);
  const at = params.get('at');
  const state = params.get('state');
  return {
    at: at && !Number.isNaN(Date.parse(at)) ? new Date(at).toISOString() : undefined,
    machine: params.get('machine') || undefined,
    site: params.get('site') || undefined,
    q: params.get('q') || undefined,
    state: state && STATES.has(state) ? (state as MachineState) : undefined,
  };
}

/** Writes the view into the address without a reload; the hash and other parameters stay. */
export function writeView(view: View): void {
  const url = new URL(location.href);
  for (const key of ['at', 'machine', 'site', 'q', 'state'] as const) {
    const value = view[key];
    if (value) url.searchParams.set(key, value);
    else url.searchParams.delete(key);
  }
  if (url.href !== location.href) history.replaceState(null, '', url);
}

import type { ListChangesIn } from '../../src/services/status/delta/lists.js';
import { ago, byId, clock, el, seconds } from './dom.js';
import type {
  DashboardAppliesFragment,
  DashboardDurationFragment as DurationRow,
  DashboardHandActFragment as HandActRow,
  DashboardPlanFragment as PlanStatus,
  DashboardCauseFragment as RepeatedCause,
  DashboardRunningCallFragment as RunningCall,
  DashboardSeatFragment as SeatStatus,
  DashboardStatusFragment as Status,
} from './generated/graphql.js';

/** A replicated seat may have hundreds of holders: the row names this many and counts the rest. */
const HOLDERS_SHOWN = 6;

/** The seats table: a row per seat, replaced only when that seat changed. */
export class SeatTable {
  private readonly rows = new Map<string, HTMLTableRowElement>();
  private readonly body = byId('seats').querySelector('tbody')!;
  private readonly counts = byId('seat-counts');
  private seats: SeatStatus[] = [];

  replace(seats: SeatStatus[]): void {
    this.rows.clear();
    this.body.replaceChildren(...seats.map((s) => this.row(s)));
    this.seats = seats;
    this.count();
  }

  apply(changes: ListChangesIn<SeatStatus>, seats: SeatStatus[]): void {
    for (const name of changes.removed) {
      this.rows.get(name)?.remove();
      this.rows.delete(name);
    }
    for (const s of changes.changed ?? []) this.rows.get(s.name)?.replaceWith(this.row(s));
    if (changes.added.length || changes.order) {
      // New seats take their place in the list's order; rows already shown are moved, not rebuilt.
      this.body.append(...seats.map((s) => this.rows.get(s.name) ?? this.row(s)));
    }
    this.seats = seats;
    this.count();
  }

  private count(): void {
    const held = this.seats.filter((s) => s.held).length;
    this.counts.textContent = `${held} held · ${this.seats.length - held} unheld`;
    this.counts.dataset.unheld = String(this.seats.length - held);
  }

  private row(s: SeatStatus): HTMLTableRowElement {
    const tr = el('tr', s.held ? 'held' : 'unheld');
    tr.dataset.seat = s.name;
    const holders = el('td');
    for (const h of s.holders.slice(0, HOLDERS_SHOWN))
      holders.append(el('span', h.derived ? 'holder derived' : 'holder recorded', `${h.machine}/${h.module}${h.derived ? ' (derived)' : ' (recorded)'}`));
    if (s.holders.length > HOLDERS_SHOWN) {
      const derived = s.holders.filter((h) => h.derived).length;
      holders.append(el('span', 'muted', `+${s.holders.length - HOLDERS_SHOWN} more (${s.holders.length - derived} recorded, ${derived} derived in all)`));
    }
    if (!s.holders.length) holders.append(el('span', 'muted', 'no holder'));
    tr.append(el('td', undefined, s.name), el('td', s.held ? 'yes' : 'no', s.held ? 'held' : 'unheld'), holders);
    this.rows.set(s.name, tr);
    return tr;
  }
}

/** What one plan's machines answered, from `plans { applies }`. */
export type Applies = Map<string, DashboardAppliesFragment['applies']>;

/** Plans with their tier progress (tier k of n; machines of the tier reported / ok / failed) and a stopped one's reason. */
export function renderPlans(plans: PlanStatus[], applies: Applies): void {
  const root = byId('plans');
  if (!plans.length) return void root.replaceChildren(el('p', 'muted', 'none open or stopped'));
  root.replaceChildren(
    ...plans.map((p) => {
      const box = el('div', `plan ${p.state}`);
      box.dataset.plan = p.id;
      const tierMachines = p.tiers[p.tier] ?? [];
      const sent = (applies.get(p.id) ?? []).filter((a) => a.tier === p.tier);
      const ok = sent.filter((a) => a.ok === true).length;
      const failed = sent.filter((a) => a.ok === false).length;
      const reported = ok + failed;
      const progress = el('div', 'bar');
      const fill = el('span', 'fill');
      fill.style.width = `${tierMachines.length ? (100 * reported) / tierMachines.length : 0}%`;
      if (failed) fill.classList.add('failed');
      progress.append(fill);
      const tier = el('p', 'tier', `tier ${p.tier + 1} of ${p.tiers.length} · ${reported}/${tierMachines.length} reported · ${ok} ok · ${failed} failed`);
      tier.dataset.tier = String(p.tier + 1);
      tier.dataset.reported = String(reported);
      box.append(el('p', undefined, `${p.seat} ← ${p.build}`), el('span', `state ${p.state}`, p.state), tier, progress);
      if (p.behind) box.append(el('p', 'muted', `behind ${p.behind}`));
      if (p.stopReason) box.append(el('p', 'reason', `stopped: ${p.stopReason}`));
      return box;
    }),
  );
}

export function renderDurations(rows: DurationRow[]): void {
  const body = byId('durations').querySelector('tbody')!;
  body.replaceChildren(
    ...rows.map((d) => {
      const tr = el('tr');
      tr.dataset.kind = d.kind;
      const over = (v: number | null) => (v !== null && v > d.bound ? 'over' : '');
      tr.append(
        el('td', undefined, d.kind),
        el('td', over(d.p50), seconds(d.p50)),
        el('td', over(d.p90), seconds(d.p90)),
        el('td', over(d.p99), seconds(d.p99)),
        el('td', 'muted', seconds(d.bound)),
        el('td', d.exceeded ? 'over' : '', `${d.exceeded} of ${d.count}`),
      );
      return tr;
    }),
  );
}

export function renderCalls(count: number, calls: RunningCall[]): void {
  byId('calls-count').textContent = String(count);
  byId('calls').replaceChildren(
    ...(calls.length
      ? calls.map((c) => el('li', undefined, `${c.seat}.${c.verb} by ${c.caller} (${c.door}) for ${ago(c.startedAt)}`))
      : [el('li', 'muted', 'none running')]),
  );
}

export function renderHandActs(count: number, causes: RepeatedCause[], acts: HandActRow[] | undefined): void {
  byId('hand-acts-count').textContent = String(count);
  byId('repeated-causes').replaceChildren(...causes.map((c) => el('li', 'cause', `${c.cause}: ${c.count}× (last ${clock(c.lastAt)})`)));
  if (acts)
    byId('hand-acts').replaceChildren(
      ...(acts.length
        ? acts.map((a) => el('li', undefined, `${clock(a.at)} ${a.actor} ${a.act}${a.target ? ` ${a.target}` : ''}: ${a.why}${a.cause ? ` [${a.cause}]` : ''}`))
        : [el('li', 'muted', 'none this week')]),
    );
}

/**
 * The gateway is shown "behind by N s" past this lag of its news (composedAt − heardUntil): the
 * mesh is shown as it was N s ago, not its machines late (BEHIND_SHOWN_S, docs/status.md).
 */
const BEHIND_SHOWN_MS = 5_000;

/** The composition line of the header: seq, when composed, how long it took, and whether the page or the gateway is behind. */
export function renderComposition(status: Pick<Status, 'seq' | 'composedAt' | 'heardUntil' | 'tookMs'> | undefined, behindAfterMs: number): void {
  const target = byId('composition');
  if (!status) return void (target.textContent = 'no composition yet');
  const age = Date.now() - Date.parse(status.composedAt);
  target.textContent = `seq ${status.seq} · composed ${clock(status.composedAt)} (${ago(status.composedAt)} ago) · took ${status.tookMs.toFixed(1)} ms`;
  target.dataset.seq = String(status.seq);
  target.classList.toggle('behind', age > behindAfterMs);
  if (age > behindAfterMs) target.textContent += ' · behind: no newer composition';
  const lagMs = Date.parse(status.composedAt) - Date.parse(status.heardUntil ?? status.composedAt);
  const lagging = lagMs > BEHIND_SHOWN_MS;
  target.classList.toggle('lagging', lagging);
  if (lagging) target.textContent += ` · behind by ${Math.round(lagMs / 1000)} s: news up to ${clock(status.heardUntil)} is heard, machines shown as then`;
}

import { Invalid } from '../../../kernel/errors.js';
import { isName, NAME_RULE } from '../../../kernel/names.js';
import type { MachineState } from '../../machines/machines.js';
import type { Composition, MachineStatus } from '../composition.js';
import { KIND_HEADER, PART_HEADER, type StreamMessage } from '../replicating/wire.js';
import type { StatusHistory } from './history.js';
import type { LookBackIndex } from './look-back-index.js';
import type { KeptChange } from './machine-changes.js';

/** `machineHistory` lists at most this many changes of one machine (the earliest first); ask again from the last one's `at` for more. */
export const MACHINE_HISTORY_MAX = 500;
/** `since` defaults to this long before `until`: the day the stream holds by default. */
export const MACHINE_HISTORY_DEFAULT_SPAN_MS = 24 * 3600 * 1000;

/** One change of a machine as the compositions saw it: what it became and when. */
export interface MachineStateChange {
  /** The composition that first showed it. */
  seq: number;
  /** That composition's composedAt. */
  at: string;
  /** Null when the machine left the compositions (forgotten). */
  state: MachineState | null;
  site: string | null;
  modules: string[];
  lastHeardAt: string | null;
}

const asChange = (seq: number, at: string, m: MachineStatus | undefined): MachineStateChange => ({
  seq,
  at,
  state: m?.state ?? null,
  site: m?.site ?? null,
  modules: m?.modules ?? [],
  lastHeardAt: m?.lastHeardAt ?? null,
});

/** Whether two entries say the same of the machine: its state, site and modules (lastHeardAt moves with every heartbeat). */
const same = (a: MachineStateChange, b: MachineStateChange) =>
  a.state === b.state && a.site === b.site && a.modules.length === b.modules.length && a.modules.every((m, i) => m === b.modules[i]);

/**
 * One machine's changes between `since` and `until` (UP / LATE / SILENT, site, modules): the
 * first entry is the machine as it was at `since` (in the composition in force then, or the first
 * the history holds), then each composition that changed it; at most MACHINE_HISTORY_MAX. From the
 * replica's look-back index when it holds `since` (a binary search and the machine's own changes),
 * else read from the status stream (`machineHistoryFromStream`).
 */
export async function machineHistory(
  history: StatusHistory,
  query: { name: string; since?: Date | null; until?: Date | null },
  now = new Date(),
): Promise<MachineStateChange[]> {
  if (!isName(query.name)) throw new Invalid(`a machine name is ${NAME_RULE}`, 'name');
  const until = query.until ?? now;
  const since = query.since ?? new Date(until.getTime() - MACHINE_HISTORY_DEFAULT_SPAN_MS);
  if (Number.isNaN(since.getTime()) || Number.isNaN(until.getTime())) throw new Invalid('since and until are instants', 'since');
  if (since > until) throw new Invalid('since is after until', 'since');
  const index = history.index;
  if (index && (await index.covers(since.getTime()))) return fromIndex(index, query.name, since, until);
  return machineHistoryFromStream(history, query.name, since, until);
}

const keptAsChange = (seq: number, at: number, c: KeptChange): MachineStateChange => ({
  seq,
  at: new Date(at).toISOString(),
  state: c.state,
  site: c.site,
  modules: c.modules,
  lastHeardAt: c.lastHeardAt === null ? null : new Date(c.lastHeardAt).toISOString(),
});

/**
 * From the index: the composition in force at `since` (or the first held) and at `until`, then the
 * machine's changes between. Its cost is two binary searches and the changes listed. The first
 * entry's lastHeardAt is the machine's at its last change: the index keeps changes, not beats.
 */
function fromIndex(index: LookBackIndex, name: string, since: Date, until: Date): MachineStateChange[] {
  const end = index.timeline.inForceAt(until.getTime());
  if (!end) return [];
  const start = index.timeline.inForceAt(since.getTime()) ?? index.timeline.first()!;
  const { from, after } = index.changes.changesOf(name, start.seq, end.seq, MACHINE_HISTORY_MAX);
  const changes = from ? [keptAsChange(start.seq, start.at, from)] : [];
  for (const c of after) {
    if (changes.length >= MACHINE_HISTORY_MAX) break;
    changes.push(keptAsChange(c.seq, c.at, c));
  }
  return changes;
}

/**
 * From the status stream, as before the index (a replica whose backfill has not reached `since`):
 * the composition in force at `since` (or the stream's first snapshot), then every delta after it
 * that names the machine (a delta not holding its name is not parsed), up to `until`.
 */
export async function machineHistoryFromStream(history: StatusHistory, name: string, since: Date, until: Date): Promise<MachineStateChange[]> {
  const query = { name };
  const bounds = await history.bounds();
  const start = await history.locate({ at: since }, bounds);
  const end = await history.locate({ at: until }, bounds);
  if (!end) return [];
  let composition: Composition | undefined;
  let from = bounds.first;
  if (start) {
    composition = await history.rebuild(start, bounds.first).catch(() => undefined);
    if (composition) from = start.seq + 1;
  }
  const changes: MachineStateChange[] = [];
  const push = (change: MachineStateChange) => {
    const last = changes.at(-1);
    if (!last || !same(last, change)) changes.push(change);
  };
  if (composition)
    push(
      asChange(
        composition.seq,
        composition.composedAt,
        composition.machines.find((m) => m.name === query.name),
      ),
    );
  // A one-part delta that does not hold the name (quoted, as its added, changed and removed
  // lists write it) does not name the machine: it is not parsed.
  const needle = Buffer.from(JSON.stringify(query.name));
  const skip = (msg: StreamMessage) =>
    msg.headers?.get(KIND_HEADER) === 'delta' &&
    !msg.headers.get(PART_HEADER) &&
    !msg.headers.get('Content-Encoding') &&
    Buffer.from(msg.data.buffer, msg.data.byteOffset, msg.data.byteLength).indexOf(needle) < 0;
  let held = composition?.seq;
  for await (const entry of history.entries(from, end.seq, skip)) {
    if (changes.length >= MACHINE_HISTORY_MAX) break;
    if (entry.kind === 'snapshot') {
      if (held !== undefined && entry.seq <= held) continue;
      held = entry.seq;
      push(
        asChange(
          entry.seq,
          entry.composition.composedAt,
          entry.composition.machines.find((m) => m.name === query.name),
        ),
      );
      continue;
    }
    if (held === undefined || entry.seq <= held) continue;
    held = entry.seq;
    const d = entry.delta;
    if (d.machines.removed.includes(query.name)) push(asChange(d.seq, d.composedAt, undefined));
    const item = d.machines.added.find((m) => m.name === query.name) ?? d.machines.changed.find((m) => m.name === query.name);
    if (item) push(asChange(d.seq, d.composedAt, item));
  }
  return changes;
}

import type { Pacer } from '../../kernel/pacer.js';

/** One machine as this replica heard it: its last two beats' heard instants and when a replica took the last one in. */
interface HeardEntry {
  lastMs: number;
  /** The beat before the last; undefined when this replica heard only one. */
  previousMs: number | undefined;
  previousTakenMs: number;
  /**
   * When the last beat was taken in by a running replica: this replica's clock when its ingest wrote
   * it, the stream's time when the follower read it back. A gap whose first beat was taken in before
   * the gateway's unbroken running began spans its downtime (`heartbeatGaps`).
   */
  takenMs: number;
  /** `lastMs` as ISO 8601, made once when first asked. */
  iso: string | undefined;
}

/** The beat before one heard at `atMs`, as `heartbeatGaps` wants it. */
export interface BeatBefore {
  atMs: number;
  takenMs: number;
}

/**
 * When each machine was last heard, kept in memory (issue 37): fed by the hearing follower (every
 * beat the news stream holds, on every replica) and by this replica's own ingest. The store keeps
 * only a checkpoint of it, so every reader takes the later of the two (`lastHeardAt`).
 */
export class HeardMachines {
  private readonly byName = new Map<string, HeardEntry>();

  /** Told of each machine whose last-heard moved later (the hearing gathers them for the composer). */
  onLater: ((machine: string) => void) | undefined;

  /** Notes a beat of `machine` heard at `atMs`; one older than the last is no news of its liveness. */
  note(machine: string, atMs: number, takenMs: number): void {
    const entry = this.byName.get(machine);
    if (!entry) {
      this.byName.set(machine, { lastMs: atMs, previousMs: undefined, previousTakenMs: 0, takenMs, iso: undefined });
      this.onLater?.(machine);
      return;
    }
    if (atMs === entry.lastMs) {
      entry.takenMs = Math.max(entry.takenMs, takenMs);
      return;
    }
    if (atMs < entry.lastMs) {
      if (entry.previousMs === undefined || atMs > entry.previousMs) {
        entry.previousMs = atMs;
        entry.previousTakenMs = takenMs;
      } else if (atMs === entry.previousMs) entry.previousTakenMs = Math.max(entry.previousTakenMs, takenMs);
      return;
    }
    entry.previousMs = entry.lastMs;
    entry.previousTakenMs = entry.takenMs;
    entry.lastMs = atMs;
    entry.takenMs = takenMs;
    entry.iso = undefined;
    this.onLater?.(machine);
  }

  /** When `machine` was last heard, in ms; undefined when this replica has not heard it. */
  lastMs(machine: string): number | undefined {
    return this.byName.get(machine)?.lastMs;
  }

  /**
   * The later of `storedIso` (the store's checkpoint) and what this replica heard of `machine`, as
   * ISO 8601: the one last-heard instant every reader shows and judges.
   */
  lastHeardAt(machine: string, storedIso: string): string {
    const entry = this.byName.get(machine);
    if (!entry || entry.lastMs <= Date.parse(storedIso)) return storedIso;
    entry.iso ??= new Date(entry.lastMs).toISOString();
    return entry.iso;
  }

  /**
   * The beat heard just before one at `atMs`, when this replica knows it: the last when `atMs` is
   * newer, the one before when `atMs` is the last itself; undefined otherwise (heard out of order).
   */
  before(machine: string, atMs: number): BeatBefore | undefined {
    const entry = this.byName.get(machine);
    if (!entry) return undefined;
    if (atMs > entry.lastMs) return { atMs: entry.lastMs, takenMs: entry.takenMs };
    if (atMs === entry.lastMs && entry.previousMs !== undefined) return { atMs: entry.previousMs, takenMs: entry.previousTakenMs };
    return undefined;
  }

  /**
   * Calls `visit` with each machine this replica heard and when it last heard it (a takeover's
   * composition asks which are newer than shown), giving the loop its turns as `pacer` says.
   */
  async forEachHeard(visit: (machine: string, lastMs: number) => void, pacer: Pacer): Promise<void> {
    for (const [machine, entry] of this.byName) {
      visit(machine, entry.lastMs);
      if (pacer.due()) await pacer.turn();
    }
  }

  get size(): number {
    return this.byName.size;
  }
}

import type { MachineState } from '../machines/machines.js';
import type { ComposeTrigger } from './composing/poke.js';

/** A holder of a seat as one composition saw it. */
export interface HolderStatus {
  machine: string;
  module: string;
  site: string | null;
  derived: boolean;
}

export interface MachineStatus {
  name: string;
  site: string | null;
  state: MachineState;
  lastHeardAt: string;
  modules: string[];
  /** The seats this machine's modules hold, as `seat` with the module holding it. */
  holdings: { seat: string; module: string; derived: boolean }[];
}

/**
 * A machine whose only change is `lastHeardAt`, by less than this, keeps the `lastHeardAt` shown
 * before: a heartbeat is not a change for every subscriber. Its state (UP, LATE, SILENT), judged
 * from the true instant, still moves at once (docs/status-deltas.md). The serving replica's view
 * keeps it so (`MeshView.hearLater`), and its publisher for every composition (`coarsenLastHeard`).
 */
export const LAST_HEARD_GRAIN_MS = 60_000;

/** Whether two machines' modules (sorted, as a composition holds them) are the same. */
export const sameModules = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((m, i) => m === b[i]);

export interface SeatStatus {
  name: string;
  held: boolean;
  holders: HolderStatus[];
}

export interface PlanStatus {
  id: string;
  seat: string;
  build: string;
  state: string;
  tier: number;
  tiers: string[][];
  behind: string | null;
  openedAt: string | null;
  endedAt: string | null;
  /** Why a STOPPED plan stopped; null otherwise. */
  stopReason: string | null;
}

export interface RepeatedCauseStatus {
  cause: string;
  count: number;
  firstAt: string;
  lastAt: string;
}

/**
 * A gateway whose news is heard to more than this far behind its composition
 * (`composedAt − heardUntil`) is shown "behind by N s" by the dashboard and `meshctl status`
 * (docs/status.md, "Behind"): the mesh as it was N s ago, not machines going LATE.
 */
export const BEHIND_SHOWN_S = 5;

/** How far a composition's news was behind it, in seconds; 0 for one of an older gateway (no heardUntil). */
export const behindSeconds = (c: Pick<Composition, 'composedAt' | 'heardUntil'>): number =>
  c.heardUntil ? Math.max(0, (Date.parse(c.composedAt) - Date.parse(c.heardUntil)) / 1000) : 0;

/**
 * The whole mesh at one instant: an immutable value, composed once by the serving replica,
 * published on `<subjects>.status` as JSON with exactly these field names (those of the GraphQL
 * `Status` type), and kept by every replica as its last composition. Instants are ISO strings so
 * the value is the same before and after the wire.
 */
export interface Composition {
  seq: number;
  /** The controller (MESH_CONTROLLER) that composed it; absent from a composition of an older gateway. */
  controller?: string;
  composedAt: string;
  /**
   * News stored before this instant was written when the composition was made, and machines'
   * states are judged at it (docs/status.md); absent from a composition of an older gateway, which
   * judged at `composedAt`.
   */
  heardUntil?: string;
  tookMs: number;
  trigger: string;
  machines: MachineStatus[];
  seats: SeatStatus[];
  unheldSeats: string[];
  callsRunning: number;
  handActsThisWeek: number;
  repeatedCauses: RepeatedCauseStatus[];
  plans: PlanStatus[];
}

/** Where compositions arrive on a replica: the last one at once, and each new one as it comes. */
export interface StatusFeed {
  current(): Composition | undefined;
  /** Calls `listener` with each composition newer than the last; returns the unsubscribe. */
  subscribe(listener: (composition: Composition) => void): () => void;
  /**
   * Where the serving replica's composer hands each composition it composed: into the status
   * stream as a delta or snapshot, then kept here (src/services/status/replicating/stream-publisher.ts).
   * Absent: the composer publishes it whole on `<subjects>.status`, as before the stream.
   */
  publish?(composition: Composition, ...triggers: ComposeTrigger[]): Promise<void>;
  /** Resolves once what the status stream holds now is read (a takeover's floor); absent without a stream. */
  readUpToNow?(): Promise<void>;
}

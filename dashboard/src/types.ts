// The parts of the schema's types the dashboard selects (schema.graphql: Status, StatusDelta, …).

export type MachineState = 'UP' | 'LATE' | 'SILENT';

export interface MachineStatus {
  name: string;
  site: string | null;
  state: MachineState;
  lastHeardAt: string;
  modules: string[];
  holdings: { seat: string; module: string; derived: boolean }[];
}

export interface SeatStatus {
  name: string;
  held: boolean;
  holders: { machine: string; module: string; site: string | null; derived: boolean }[];
}

export interface PlanStatus {
  id: string;
  seat: string;
  build: string;
  state: string;
  tier: number;
  tiers: string[][];
  stopReason: string | null;
  openedAt: string | null;
  endedAt: string | null;
  behind: string | null;
}

export interface RepeatedCause {
  cause: string;
  count: number;
  firstAt: string;
  lastAt: string;
}

export interface Status {
  seq: number;
  composedAt: string;
  /** News is written up to this instant; states are judged at it (docs/status.md, "Behind"). */
  heardUntil: string;
  tookMs: number;
  trigger: string;
  machines: MachineStatus[];
  seats: SeatStatus[];
  plans: PlanStatus[];
  repeatedCauses: RepeatedCause[];
  unheldSeats: string[];
  callsRunning: number;
  handActsThisWeek: number;
}

export interface ListChanges<T> {
  added: T[];
  addedAt: number[];
  changed?: T[];
  removed: string[];
  order: string[] | null;
}

export interface StatusDelta {
  seq: number;
  baseSeq: number;
  composedAt: string;
  heardUntil: string;
  tookMs: number;
  trigger: string;
  machines: ListChanges<MachineStatus>;
  seats: ListChanges<SeatStatus>;
  plans: ListChanges<PlanStatus>;
  repeatedCauses: ListChanges<RepeatedCause>;
  unheldSeats: ListChanges<string>;
  callsRunning: number | null;
  handActsThisWeek: number | null;
}

export interface StatusChange {
  seq: number;
  baseSeq: number | null;
  full: Status | null;
  delta: StatusDelta | null;
}

import type { ColumnType, Generated, Selectable } from 'kysely';

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Json<T> = ColumnType<T, string | undefined, string>;

/** The store's tables as Kysely sees them; migrations/ is what makes them. */
export interface DB {
  machine: MachineTable;
  assignment: AssignmentTable;
  assignment_claim: AssignmentClaimTable;
  seat: SeatTable;
  seat_alias: SeatAliasTable;
  seat_holding: SeatHoldingTable;
  duration: DurationTable;
  plan: PlanTable;
  plan_apply: PlanApplyTable;
  build: BuildTable;
  news_partition: NewsPartitionTable;
}

interface MachineTable {
  name: string;
  site: string | null;
  first_heard_at: Timestamp;
  last_heard_at: Timestamp;
  heartbeats: ColumnType<string, number | string | undefined, number | string>;
  /** When a gateway last wrote a heartbeat of it, by the gateway's clock (null before 0003). */
  written_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

interface AssignmentTable {
  machine: string;
  module: string;
  running: ColumnType<boolean, boolean | undefined, boolean>;
  claims: Json<string[]>;
  since: Timestamp;
  /** When the heartbeat that last changed this row (started it, or changed its claims) was heard. */
  heard_at: Timestamp;
}

interface SeatTable {
  name: string;
  scope: ColumnType<string, string | undefined, string>;
  delivers: ColumnType<string, string | undefined, string>;
  decided: ColumnType<string, string | undefined, string>;
  replicated: ColumnType<boolean, boolean | undefined, boolean>;
  accepts: Json<unknown>;
  emits: Json<unknown>;
  serves: Json<unknown>;
  created_at: Timestamp;
  /** Kept by a trigger on seat_holding (migrations/0005_claims_by_name.ts): a holding of this seat is on record. Never written by code. */
  held_on_record: ColumnType<boolean, never, never>;
}

/** Kept by triggers on assignment (migrations/0005_claims_by_name.ts): one row per name a running module claims. Never written by code. */
interface AssignmentClaimTable {
  claim: ColumnType<string, never, never>;
  machine: ColumnType<string, never, never>;
  module: ColumnType<string, never, never>;
}

interface SeatAliasTable {
  alias: string;
  seat: string;
}

interface SeatHoldingTable {
  seat: string;
  machine: string;
  module: string;
  scope: ColumnType<string, string | undefined, string>;
  since: Timestamp;
}

export interface DurationTable {
  id: Generated<string>;
  kind: 'apply' | 'heartbeat_gap' | 'plan_tier' | 'build';
  subject: string;
  seconds: number;
  heard_at: Timestamp;
}

export interface PlanTable {
  id: string;
  seat: string;
  build: string;
  tiers: Json<string[][]>;
  tier: ColumnType<number, number | undefined, number>;
  state: 'QUEUED' | 'OPEN' | 'STOPPED' | 'DONE' | 'CLOSED';
  behind: string | null;
  created_at: Timestamp;
  opened_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  tier_started_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  ended_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** Why the plan stopped (migrations/0002_plan_stop_reason.ts); null unless STOPPED. */
  stop_reason: ColumnType<string | null, string | null | undefined, string | null>;
}

interface PlanApplyTable {
  plan: string;
  tier: number;
  machine: string;
  sent_at: Timestamp;
  reported_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  ok: boolean | null;
  detail: string | null;
}

interface BuildTable {
  name: string;
  module: string | null;
  state: string;
  started_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  ended_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

/** Who writes each partition of the news, and up to which stream sequence it is written (migrations/0009_news_partition.ts). */
interface NewsPartitionTable {
  partition: number;
  owner: string | null;
  written_seq: ColumnType<string | null, number | null | undefined, number | null>;
}

export type SeatRow = Selectable<SeatTable>;

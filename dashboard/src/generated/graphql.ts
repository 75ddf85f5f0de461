/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
/** How the call came in: a GraphQL mutation or a NATS request to `<subjects>.seat.<seat>.<verb>`. */
export type CallDoor =
  | 'GRAPHQL'
  | 'NATS';

/** RUNNING until the work ends OK or FAILED; ABANDONED when the replica running it stopped first. */
export type CallState =
  | 'ABANDONED'
  | 'FAILED'
  | 'OK'
  | 'RUNNING';

/** What a duration times. */
export type DurationKind =
  /** An apply sent to a machine → that machine's first report. */
  | 'APPLY'
  /** A build: started → finished or failed. */
  | 'BUILD'
  /** A late heartbeat: the gap since the one before, when over 1.5 expected intervals. */
  | 'HEARTBEAT_GAP'
  /** A plan's tier: started → every machine reported ok. */
  | 'PLAN_TIER';

/** UP; LATE once news heard past 1.5 expected heartbeat intervals after its last beat is heard with none of its own; SILENT past 6. */
export type MachineState =
  | 'LATE'
  | 'SILENT'
  | 'UP';

export type DashboardAppliesFragment = { id: string, applies: Array<{ machine: string, tier: number, ok: boolean | null, reportedAt: string | null }> };

export type DashboardHandActFragment = { id: string, at: string, actor: string, act: string, target: string | null, why: string, cause: string | null };

export type DashboardRunningCallFragment = { id: string, seat: string, verb: string, caller: string, door: CallDoor, startedAt: string };

export type DashboardDurationFragment = { kind: DurationKind, count: number, p50: number | null, p90: number | null, p99: number | null, bound: number, exceeded: number };

export type DashboardDurationsQueryVariables = Exact<{ [key: string]: never; }>;


export type DashboardDurationsQuery = { durations: Array<{ kind: DurationKind, count: number, p50: number | null, p90: number | null, p99: number | null, bound: number, exceeded: number }> };

export type DashboardCallsQueryVariables = Exact<{ [key: string]: never; }>;


export type DashboardCallsQuery = { calls: { edges: Array<{ node: { id: string, seat: string, verb: string, caller: string, door: CallDoor, startedAt: string } }> } };

export type DashboardHandActsQueryVariables = Exact<{
  since?: string | null | undefined;
}>;


export type DashboardHandActsQuery = { handActs: { edges: Array<{ node: { id: string, at: string, actor: string, act: string, target: string | null, why: string, cause: string | null } }> } };

export type DashboardPlansQueryVariables = Exact<{ [key: string]: never; }>;


export type DashboardPlansQuery = { plans: Array<{ id: string, applies: Array<{ machine: string, tier: number, ok: boolean | null, reportedAt: string | null }> }> };

export type DashboardPlanChangedSubscriptionVariables = Exact<{ [key: string]: never; }>;


export type DashboardPlanChangedSubscription = { planChanged: { id: string, applies: Array<{ machine: string, tier: number, ok: boolean | null, reportedAt: string | null }> } };

export type DashboardCallChangedSubscriptionVariables = Exact<{
  after?: string | null | undefined;
}>;


export type DashboardCallChangedSubscription = { callChanged: { state: CallState, cursor: string | null, id: string, seat: string, verb: string, caller: string, door: CallDoor, startedAt: string } };

export type DashboardHandActAddedSubscriptionVariables = Exact<{
  after?: string | null | undefined;
}>;


export type DashboardHandActAddedSubscription = { handActAdded: { id: string, at: string, actor: string, act: string, target: string | null, why: string, cause: string | null } };

export type DashboardSiteCountFragment = { site: string | null, up: number, late: number, silent: number };

export type DashboardStampFragment = { seq: number, composedAt: string, heardUntil: string, tookMs: number, trigger: string };

export type DashboardSizeQueryVariables = Exact<{ [key: string]: never; }>;


export type DashboardSizeQuery = { status: { seq: number, sitesUnlisted: number, sites: Array<{ site: string | null, up: number, late: number, silent: number }> } };

export type DashboardSitesSubscriptionVariables = Exact<{
  everyMs?: number | null | undefined;
}>;


export type DashboardSitesSubscription = { status: { callsRunning: number, handActsThisWeek: number, sitesUnlisted: number, seq: number, composedAt: string, heardUntil: string, tookMs: number, trigger: string, sites: Array<{ site: string | null, up: number, late: number, silent: number }>, plans: Array<{ id: string, seat: string, build: string, state: string, tier: number, tiers: Array<Array<string>>, stopReason: string | null, openedAt: string | null, endedAt: string | null, behind: string | null }>, repeatedCauses: Array<{ cause: string, count: number, firstAt: string, lastAt: string }> } };

export type DashboardSiteSubscriptionVariables = Exact<{
  site?: string | null | undefined;
  everyMs?: number | null | undefined;
}>;


export type DashboardSiteSubscription = { status: { seq: number, composedAt: string, heardUntil: string, tookMs: number, trigger: string, machines: Array<{ name: string, site: string | null, state: MachineState, lastHeardAt: string, modules: Array<string>, holdings: Array<{ seat: string, module: string, derived: boolean }> }> } };

export type DashboardPastSitesQueryVariables = Exact<{
  at?: string | null | undefined;
}>;


export type DashboardPastSitesQuery = { statusAt: { seq: number, composedAt: string, sitesUnlisted: number, sites: Array<{ site: string | null, up: number, late: number, silent: number }> } | null };

export type DashboardPastSiteQueryVariables = Exact<{
  at?: string | null | undefined;
  site?: string | null | undefined;
}>;


export type DashboardPastSiteQuery = { statusAt: { seq: number, composedAt: string, machines: Array<{ name: string, site: string | null, state: MachineState, lastHeardAt: string, modules: Array<string>, holdings: Array<{ seat: string, module: string, derived: boolean }> }> } | null };

export type DashboardMachineFragment = { name: string, site: string | null, state: MachineState, lastHeardAt: string, modules: Array<string>, holdings: Array<{ seat: string, module: string, derived: boolean }> };

export type DashboardSeatFragment = { name: string, held: boolean, holders: Array<{ machine: string, module: string, site: string | null, derived: boolean }> };

export type DashboardPlanFragment = { id: string, seat: string, build: string, state: string, tier: number, tiers: Array<Array<string>>, stopReason: string | null, openedAt: string | null, endedAt: string | null, behind: string | null };

export type DashboardCauseFragment = { cause: string, count: number, firstAt: string, lastAt: string };

export type DashboardStatusFragment = { seq: number, composedAt: string, heardUntil: string, tookMs: number, trigger: string, callsRunning: number, handActsThisWeek: number, unheldSeats: Array<string>, machines: Array<{ name: string, site: string | null, state: MachineState, lastHeardAt: string, modules: Array<string>, holdings: Array<{ seat: string, module: string, derived: boolean }> }>, seats: Array<{ name: string, held: boolean, holders: Array<{ machine: string, module: string, site: string | null, derived: boolean }> }>, plans: Array<{ id: string, seat: string, build: string, state: string, tier: number, tiers: Array<Array<string>>, stopReason: string | null, openedAt: string | null, endedAt: string | null, behind: string | null }>, repeatedCauses: Array<{ cause: string, count: number, firstAt: string, lastAt: string }> };

export type DashboardMachineChangesFragment = { addedAt: Array<number>, removed: Array<string>, order: Array<string> | null, added: Array<{ name: string, site: string | null, state: MachineState, lastHeardAt: string, modules: Array<string>, holdings: Array<{ seat: string, module: string, derived: boolean }> }>, changed: Array<{ name: string, site: string | null, state: MachineState, lastHeardAt: string, modules: Array<string>, holdings: Array<{ seat: string, module: string, derived: boolean }> }> };

export type DashboardSeatChangesFragment = { addedAt: Array<number>, removed: Array<string>, order: Array<string> | null, added: Array<{ name: string, held: boolean, holders: Array<{ machine: string, module: string, site: string | null, derived: boolean }> }>, changed: Array<{ name: string, held: boolean, holders: Array<{ machine: string, module: string, site: string | null, derived: boolean }> }> };

export type DashboardDeltaFragment = { seq: number, baseSeq: number, composedAt: string, heardUntil: string, tookMs: number, trigger: string, callsRunning: number | null, handActsThisWeek: number | null, machines: { addedAt: Array<number>, removed: Array<string>, order: Array<string> | null, added: Array<{ name: string, site: string | null, state: MachineState, lastHeardAt: string, modules: Array<string>, holdings: Array<{ seat: string, module: string, derived: boolean }> }>, changed: Array<{ name: string, site: string | null, state: MachineState, lastHeardAt: string, modules: Array<string>, holdings: Array<{ seat: string, module: string, derived: boolean }> }> }, seats: { addedAt: Array<number>, removed: Array<string>, order: Array<string> | null, added: Array<{ name: string, held: boolean, holders: Array<{ machine: string, module: string, site: string | null, derived: boolean }> }>, changed: Array<{ name: string, held: boolean, holders: Array<{ machine: string, module: string, site: string | null, derived: boolean }> }> }, plans: { addedAt: Array<number>, removed: Array<string>, order: Array<string> | null, added: Array<{ id: string, seat: string, build: string, state: string, tier: number, tiers: Array<Array<string>>, stopReason: string | null, openedAt: string | null, endedAt: string | null, behind: string | null }>, changed: Array<{ id: string, seat: string, build: string, state: string, tier: number, tiers: Array<Array<string>>, stopReason: string | null, openedAt: string | null, endedAt: string | null, behind: string | null }> }, repeatedCauses: { addedAt: Array<number>, removed: Array<string>, order: Array<string> | null, added: Array<{ cause: string, count: number, firstAt: string, lastAt: string }>, changed: Array<{ cause: string, count: number, firstAt: string, lastAt: string }> }, unheldSeats: { added: Array<string>, addedAt: Array<number>, removed: Array<string>, order: Array<string> | null } };

export type DashboardSubscriptionVariables = Exact<{
  after?: number | null | undefined;
}>;


export type DashboardSubscription = { statusChanges: { seq: number, baseSeq: number | null, full: { seq: number, composedAt: string, heardUntil: string, tookMs: number, trigger: string, callsRunning: number, handActsThisWeek: number, unheldSeats: Array<string>, machines: Array<{ name: string, site: string | null, state: MachineState, lastHeardAt: string, modules: Array<string>, holdings: Array<{ seat: string, module: string, derived: boolean }> }>, seats: Array<{ name: string, held: boolean, holders: Array<{ machine: string, module: string, site: string | null, derived: boolean }> }>, plans: Array<{ id: string, seat: string, build: string, state: string, tier: number, tiers: Array<Array<string>>, stopReason: string | null, openedAt: string | null, endedAt: string | null, behind: string | null }>, repeatedCauses: Array<{ cause: string, count: number, firstAt: string, lastAt: string }> } | null, delta: { seq: number, baseSeq: number, composedAt: string, heardUntil: string, tookMs: number, trigger: string, callsRunning: number | null, handActsThisWeek: number | null, machines: { addedAt: Array<number>, removed: Array<string>, order: Array<string> | null, added: Array<{ name: string, site: string | null, state: MachineState, lastHeardAt: string, modules: Array<string>, holdings: Array<{ seat: string, module: string, derived: boolean }> }>, changed: Array<{ name: string, site: string | null, state: MachineState, lastHeardAt: string, modules: Array<string>, holdings: Array<{ seat: string, module: string, derived: boolean }> }> }, seats: { addedAt: Array<number>, removed: Array<string>, order: Array<string> | null, added: Array<{ name: string, held: boolean, holders: Array<{ machine: string, module: string, site: string | null, derived: boolean }> }>, changed: Array<{ name: string, held: boolean, holders: Array<{ machine: string, module: string, site: string | null, derived: boolean }> }> }, plans: { addedAt: Array<number>, removed: Array<string>, order: Array<string> | null, added: Array<{ id: string, seat: string, build: string, state: string, tier: number, tiers: Array<Array<string>>, stopReason: string | null, openedAt: string | null, endedAt: string | null, behind: string | null }>, changed: Array<{ id: string, seat: string, build: string, state: string, tier: number, tiers: Array<Array<string>>, stopReason: string | null, openedAt: string | null, endedAt: string | null, behind: string | null }> }, repeatedCauses: { addedAt: Array<number>, removed: Array<string>, order: Array<string> | null, added: Array<{ cause: string, count: number, firstAt: string, lastAt: string }>, changed: Array<{ cause: string, count: number, firstAt: string, lastAt: string }> }, unheldSeats: { added: Array<string>, addedAt: Array<number>, removed: Array<string>, order: Array<string> | null } } | null } };

export type DashboardCountsQueryVariables = Exact<{ [key: string]: never; }>;


export type DashboardCountsQuery = { statusCounts: Array<{ at: string, up: number, late: number, silent: number }> };

export type DashboardPastQueryVariables = Exact<{
  at?: string | null | undefined;
}>;


export type DashboardPastQuery = { statusAt: { seq: number, composedAt: string, machines: Array<{ name: string, site: string | null, state: MachineState, lastHeardAt: string, modules: Array<string>, holdings: Array<{ seat: string, module: string, derived: boolean }> }> } | null };

export type DashboardMachineChangeFragment = { seq: number, at: string, state: MachineState | null };

export type DashboardCountFragment = { at: string, up: number, late: number, silent: number };

export type DashboardMachineHistoryQueryVariables = Exact<{
  name: string;
}>;


export type DashboardMachineHistoryQuery = { machineHistory:
    | { message: string }
    | { message: string }
    | { message: string }
    | { message: string }
    | { data: Array<{ seq: number, at: string, state: MachineState | null }> }
   };

export class TypedDocumentString<TResult, TVariables>
  extends String
  implements DocumentTypeDecoration<TResult, TVariables>
{
  __apiType?: NonNullable<DocumentTypeDecoration<TResult, TVariables>['__apiType']>;
  private value: string;
  public __meta__?: Record<string, any> | undefined;

  constructor(value: string, __meta__?: Record<string, any> | undefined) {
    super(value);
    this.value = value;
    this.__meta__ = __meta__;
  }

  override toString(): string & DocumentTypeDecoration<TResult, TVariables> {
    return this.value;
  }
}
export const DashboardAppliesFragmentDoc = new TypedDocumentString(`
    fragment DashboardApplies on Plan {
  id
  applies {
    machine
    tier
    ok
    reportedAt
  }
}
    `, {"fragmentName":"DashboardApplies"}) as unknown as TypedDocumentString<DashboardAppliesFragment, unknown>;
export const DashboardHandActFragmentDoc = new TypedDocumentString(`
    fragment DashboardHandAct on HandAct {
  id
  at
  actor
  act
  target
  why
  cause
}
    `, {"fragmentName":"DashboardHandAct"}) as unknown as TypedDocumentString<DashboardHandActFragment, unknown>;
export const DashboardRunningCallFragmentDoc = new TypedDocumentString(`
    fragment DashboardRunningCall on Call {
  id
  seat
  verb
  caller
  door
  startedAt
}
    `, {"fragmentName":"DashboardRunningCall"}) as unknown as TypedDocumentString<DashboardRunningCallFragment, unknown>;
export const DashboardDurationFragmentDoc = new TypedDocumentString(`
    fragment DashboardDuration on DurationSummary {
  kind
  count
  p50
  p90
  p99
  bound
  exceeded
}
    `, {"fragmentName":"DashboardDuration"}) as unknown as TypedDocumentString<DashboardDurationFragment, unknown>;
export const DashboardSiteCountFragmentDoc = new TypedDocumentString(`
    fragment DashboardSiteCount on SiteCount {
  site
  up
  late
  silent
}
    `, {"fragmentName":"DashboardSiteCount"}) as unknown as TypedDocumentString<DashboardSiteCountFragment, unknown>;
export const DashboardStampFragmentDoc = new TypedDocumentString(`
    fragment DashboardStamp on Status {
  seq
  composedAt
  heardUntil
  tookMs
  trigger
}
    `, {"fragmentName":"DashboardStamp"}) as unknown as TypedDocumentString<DashboardStampFragment, unknown>;
export const DashboardMachineFragmentDoc = new TypedDocumentString(`
    fragment DashboardMachine on MachineStatus {
  name
  site
  state
  lastHeardAt
  modules
  holdings {
    seat
    module
    derived
  }
}
    `, {"fragmentName":"DashboardMachine"}) as unknown as TypedDocumentString<DashboardMachineFragment, unknown>;
export const DashboardSeatFragmentDoc = new TypedDocumentString(`
    fragment DashboardSeat on SeatStatus {
  name
  held
  holders {
    machine
    module
    site
    derived
  }
}
    `, {"fragmentName":"DashboardSeat"}) as unknown as TypedDocumentString<DashboardSeatFragment, unknown>;
export const DashboardPlanFragmentDoc = new TypedDocumentString(`
    fragment DashboardPlan on PlanStatus {
  id
  seat
  build
  state
  tier
  tiers
  stopReason
  openedAt
  endedAt
  behind
}
    `, {"fragmentName":"DashboardPlan"}) as unknown as TypedDocumentString<DashboardPlanFragment, unknown>;
export const DashboardCauseFragmentDoc = new TypedDocumentString(`
    fragment DashboardCause on RepeatedCauseStatus {
  cause
  count
  firstAt
  lastAt
}
    `, {"fragmentName":"DashboardCause"}) as unknown as TypedDocumentString<DashboardCauseFragment, unknown>;
export const DashboardStatusFragmentDoc = new TypedDocumentString(`
    fragment DashboardStatus on Status {
  seq
  composedAt
  heardUntil
  tookMs
  trigger
  callsRunning
  handActsThisWeek
  unheldSeats
  machines {
    ...DashboardMachine
  }
  seats {
    ...DashboardSeat
  }
  plans {
    ...DashboardPlan
  }
  repeatedCauses {
    ...DashboardCause
  }
}
    fragment DashboardMachine on MachineStatus {
  name
  site
  state
  lastHeardAt
  modules
  holdings {
    seat
    module
    derived
  }
}
fragment DashboardSeat on SeatStatus {
  name
  held
  holders {
    machine
    module
    site
    derived
  }
}
fragment DashboardPlan on PlanStatus {
  id
  seat
  build
  state
  tier
  tiers
  stopReason
  openedAt
  endedAt
  behind
}
fragment DashboardCause on RepeatedCauseStatus {
  cause
  count
  firstAt
  lastAt
}`, {"fragmentName":"DashboardStatus"}) as unknown as TypedDocumentString<DashboardStatusFragment, unknown>;
export const DashboardMachineChangesFragmentDoc = new TypedDocumentString(`
    fragment DashboardMachineChanges on MachineStatusChanges {
  added {
    ...DashboardMachine
  }
  addedAt
  changed {
    ...DashboardMachine
  }
  removed
  order
}
    fragment DashboardMachine on MachineStatus {
  name
  site
  state
  lastHeardAt
  modules
  holdings {
    seat
    module
    derived
  }
}`, {"fragmentName":"DashboardMachineChanges"}) as unknown as TypedDocumentString<DashboardMachineChangesFragment, unknown>;
export const DashboardSeatChangesFragmentDoc = new TypedDocumentString(`
    fragment DashboardSeatChanges on SeatStatusChanges {
  added {
    ...DashboardSeat
  }
  addedAt
  changed {
    ...DashboardSeat
  }
  removed
  order
}
    fragment DashboardSeat on SeatStatus {
  name
  held
  holders {
    machine
    module
    site
    derived
  }
}`, {"fragmentName":"DashboardSeatChanges"}) as unknown as TypedDocumentString<DashboardSeatChangesFragment, unknown>;
export const DashboardDeltaFragmentDoc = new TypedDocumentString(`
    fragment DashboardDelta on StatusDelta {
  seq
  baseSeq
  composedAt
  heardUntil
  tookMs
  trigger
  callsRunning
  handActsThisWeek
  machines {
    ...DashboardMachineChanges
  }
  seats {
    ...DashboardSeatChanges
  }
  plans {
    added {
      ...DashboardPlan
    }
    addedAt
    changed {
      ...DashboardPlan
    }
    removed
    order
  }
  repeatedCauses {
    added {
      ...DashboardCause
    }
    addedAt
    changed {
      ...DashboardCause
    }
    removed
    order
  }
  unheldSeats {
    added
    addedAt
    removed
    order
  }
}
    fragment DashboardMachine on MachineStatus {
  name
  site
  state
  lastHeardAt
  modules
  holdings {
    seat
    module
    derived
  }
}
fragment DashboardSeat on SeatStatus {
  name
  held
  holders {
    machine
    module
    site
    derived
  }
}
fragment DashboardPlan on PlanStatus {
  id
  seat
  build
  state
  tier
  tiers
  stopReason
  openedAt
  endedAt
  behind
}
fragment DashboardCause on RepeatedCauseStatus {
  cause
  count
  firstAt
  lastAt
}
fragment DashboardMachineChanges on MachineStatusChanges {
  added {
    ...DashboardMachine
  }
  addedAt
  changed {
    ...DashboardMachine
  }
  removed
  order
}
fragment DashboardSeatChanges on SeatStatusChanges {
  added {
    ...DashboardSeat
  }
  addedAt
  changed {
    ...DashboardSeat
  }
  removed
  order
}`, {"fragmentName":"DashboardDelta"}) as unknown as TypedDocumentString<DashboardDeltaFragment, unknown>;
export const DashboardMachineChangeFragmentDoc = new TypedDocumentString(`
    fragment DashboardMachineChange on MachineStateChange {
  seq
  at
  state
}
    `, {"fragmentName":"DashboardMachineChange"}) as unknown as TypedDocumentString<DashboardMachineChangeFragment, unknown>;
export const DashboardCountFragmentDoc = new TypedDocumentString(`
    fragment DashboardCount on StatusCount {
  at
  up
  late
  silent
}
    `, {"fragmentName":"DashboardCount"}) as unknown as TypedDocumentString<DashboardCountFragment, unknown>;
export const DashboardDurationsDocument = new TypedDocumentString(`
    query DashboardDurations {
  durations {
    ...DashboardDuration
  }
}
    fragment DashboardDuration on DurationSummary {
  kind
  count
  p50
  p90
  p99
  bound
  exceeded
}`, {"hash":"sha256:ed75c214ba71da856c18e9ef7916780daf7a5986b4017878278d145e5cc4adb0"}) as unknown as TypedDocumentString<DashboardDurationsQuery, DashboardDurationsQueryVariables>;
export const DashboardCallsDocument = new TypedDocumentString(`
    query DashboardCalls {
  calls(state: RUNNING, first: 20) {
    edges {
      node {
        ...DashboardRunningCall
      }
    }
  }
}
    fragment DashboardRunningCall on Call {
  id
  seat
  verb
  caller
  door
  startedAt
}`, {"hash":"sha256:d338444229c7bba78cb0c84d4e0e699a61bc6281ee551c87ebcd95f34c3efbaa"}) as unknown as TypedDocumentString<DashboardCallsQuery, DashboardCallsQueryVariables>;
export const DashboardHandActsDocument = new TypedDocumentString(`
    query DashboardHandActs($since: DateTime) {
  handActs(since: $since, first: 15) {
    edges {
      node {
        ...DashboardHandAct
      }
    }
  }
}
    fragment DashboardHandAct on HandAct {
  id
  at
  actor
  act
  target
  why
  cause
}`, {"hash":"sha256:d8a3de122a8f099c6ca80aa1f40670792833c4cf64b4a0e8a7e9f9e46a3ef886"}) as unknown as TypedDocumentString<DashboardHandActsQuery, DashboardHandActsQueryVariables>;
export const DashboardPlansDocument = new TypedDocumentString(`
    query DashboardPlans {
  plans(first: 50) {
    ...DashboardApplies
  }
}
    fragment DashboardApplies on Plan {
  id
  applies {
    machine
    tier
    ok
    reportedAt
  }
}`, {"hash":"sha256:0984a1300b832f88763eb624ec8ddb1812688d149025eb2f06cccfb62fca03cc"}) as unknown as TypedDocumentString<DashboardPlansQuery, DashboardPlansQueryVariables>;
export const DashboardPlanChangedDocument = new TypedDocumentString(`
    subscription DashboardPlanChanged {
  planChanged {
    ...DashboardApplies
  }
}
    fragment DashboardApplies on Plan {
  id
  applies {
    machine
    tier
    ok
    reportedAt
  }
}`, {"hash":"sha256:69d7bd67a8e2b8582f491636b1fbd42ba1905d6aab9d7ece1e1413985c0238f1"}) as unknown as TypedDocumentString<DashboardPlanChangedSubscription, DashboardPlanChangedSubscriptionVariables>;
export const DashboardCallChangedDocument = new TypedDocumentString(`
    subscription DashboardCallChanged($after: String) {
  callChanged(after: $after) {
    ...DashboardRunningCall
    state
    cursor
  }
}
    fragment DashboardRunningCall on Call {
  id
  seat
  verb
  caller
  door
  startedAt
}`, {"hash":"sha256:f7c8e4b2825ece391457973f2354cd94f133734c554dc430a46245d7dc09b18d"}) as unknown as TypedDocumentString<DashboardCallChangedSubscription, DashboardCallChangedSubscriptionVariables>;
export const DashboardHandActAddedDocument = new TypedDocumentString(`
    subscription DashboardHandActAdded($after: String) {
  handActAdded(after: $after) {
    ...DashboardHandAct
  }
}
    fragment DashboardHandAct on HandAct {
  id
  at
  actor
  act
  target
  why
  cause
}`, {"hash":"sha256:4ea4865bc536352a94f39e4d181cf9a23cacbf410358b97b00587df32d12f3ed"}) as unknown as TypedDocumentString<DashboardHandActAddedSubscription, DashboardHandActAddedSubscriptionVariables>;
export const DashboardSizeDocument = new TypedDocumentString(`
    query DashboardSize {
  status {
    seq
    sitesUnlisted
    sites {
      ...DashboardSiteCount
    }
  }
}
    fragment DashboardSiteCount on SiteCount {
  site
  up
  late
  silent
}`, {"hash":"sha256:86cba1d873bcb192d9d8d633d91e9b91af39793be603042c1b873828d23cbb8f"}) as unknown as TypedDocumentString<DashboardSizeQuery, DashboardSizeQueryVariables>;
export const DashboardSitesDocument = new TypedDocumentString(`
    subscription DashboardSites($everyMs: Int) {
  status(everyMs: $everyMs) {
    ...DashboardStamp
    callsRunning
    handActsThisWeek
    sitesUnlisted
    sites {
      ...DashboardSiteCount
    }
    plans {
      ...DashboardPlan
    }
    repeatedCauses {
      ...DashboardCause
    }
  }
}
    fragment DashboardSiteCount on SiteCount {
  site
  up
  late
  silent
}
fragment DashboardStamp on Status {
  seq
  composedAt
  heardUntil
  tookMs
  trigger
}
fragment DashboardPlan on PlanStatus {
  id
  seat
  build
  state
  tier
  tiers
  stopReason
  openedAt
  endedAt
  behind
}
fragment DashboardCause on RepeatedCauseStatus {
  cause
  count
  firstAt
  lastAt
}`, {"hash":"sha256:1d268400e1d2a5a92d7b852160d2938926823757ef7964acffa7465089f12798"}) as unknown as TypedDocumentString<DashboardSitesSubscription, DashboardSitesSubscriptionVariables>;
export const DashboardSiteDocument = new TypedDocumentString(`
    subscription DashboardSite($site: String, $everyMs: Int) {
  status(everyMs: $everyMs) {
    ...DashboardStamp
    machines(site: $site) {
      ...DashboardMachine
    }
  }
}
    fragment DashboardStamp on Status {
  seq
  composedAt
  heardUntil
  tookMs
  trigger
}
fragment DashboardMachine on MachineStatus {
  name
  site
  state
  lastHeardAt
  modules
  holdings {
    seat
    module
    derived
  }
}`, {"hash":"sha256:8222c808c9972aceea3a90fd139c30b3e07e3c39ed18b5e6d2f0879c435cdbcc"}) as unknown as TypedDocumentString<DashboardSiteSubscription, DashboardSiteSubscriptionVariables>;
export const DashboardPastSitesDocument = new TypedDocumentString(`
    query DashboardPastSites($at: DateTime) {
  statusAt(at: $at) {
    seq
    composedAt
    sitesUnlisted
    sites {
      ...DashboardSiteCount
    }
  }
}
    fragment DashboardSiteCount on SiteCount {
  site
  up
  late
  silent
}`, {"hash":"sha256:e41939ba0db3283c3e88cd45ed1718865a8737c2f90025f526624a2f182aab59"}) as unknown as TypedDocumentString<DashboardPastSitesQuery, DashboardPastSitesQueryVariables>;
export const DashboardPastSiteDocument = new TypedDocumentString(`
    query DashboardPastSite($at: DateTime, $site: String) {
  statusAt(at: $at) {
    seq
    composedAt
    machines(site: $site) {
      ...DashboardMachine
    }
  }
}
    fragment DashboardMachine on MachineStatus {
  name
  site
  state
  lastHeardAt
  modules
  holdings {
    seat
    module
    derived
  }
}`, {"hash":"sha256:f7723e282e2506a7049e331fa6684c5299063239ed8e73da41d4809a2196dde8"}) as unknown as TypedDocumentString<DashboardPastSiteQuery, DashboardPastSiteQueryVariables>;
export const DashboardDocument = new TypedDocumentString(`
    subscription Dashboard($after: Int) {
  statusChanges(after: $after) {
    seq
    baseSeq
    full {
      ...DashboardStatus
    }
    delta {
      ...DashboardDelta
    }
  }
}
    fragment DashboardMachine on MachineStatus {
  name
  site
  state
  lastHeardAt
  modules
  holdings {
    seat
    module
    derived
  }
}
fragment DashboardSeat on SeatStatus {
  name
  held
  holders {
    machine
    module
    site
    derived
  }
}
fragment DashboardPlan on PlanStatus {
  id
  seat
  build
  state
  tier
  tiers
  stopReason
  openedAt
  endedAt
  behind
}
fragment DashboardCause on RepeatedCauseStatus {
  cause
  count
  firstAt
  lastAt
}
fragment DashboardStatus on Status {
  seq
  composedAt
  heardUntil
  tookMs
  trigger
  callsRunning
  handActsThisWeek
  unheldSeats
  machines {
    ...DashboardMachine
  }
  seats {
    ...DashboardSeat
  }
  plans {
    ...DashboardPlan
  }
  repeatedCauses {
    ...DashboardCause
  }
}
fragment DashboardMachineChanges on MachineStatusChanges {
  added {
    ...DashboardMachine
  }
  addedAt
  changed {
    ...DashboardMachine
  }
  removed
  order
}
fragment DashboardSeatChanges on SeatStatusChanges {
  added {
    ...DashboardSeat
  }
  addedAt
  changed {
    ...DashboardSeat
  }
  removed
  order
}
fragment DashboardDelta on StatusDelta {
  seq
  baseSeq
  composedAt
  heardUntil
  tookMs
  trigger
  callsRunning
  handActsThisWeek
  machines {
    ...DashboardMachineChanges
  }
  seats {
    ...DashboardSeatChanges
  }
  plans {
    added {
      ...DashboardPlan
    }
    addedAt
    changed {
      ...DashboardPlan
    }
    removed
    order
  }
  repeatedCauses {
    added {
      ...DashboardCause
    }
    addedAt
    changed {
      ...DashboardCause
    }
    removed
    order
  }
  unheldSeats {
    added
    addedAt
    removed
    order
  }
}`, {"hash":"sha256:9e4f317a91b7d07c191b3f2ef5fb8a11e684b98354498b7bd3cdb4257c3b9172"}) as unknown as TypedDocumentString<DashboardSubscription, DashboardSubscriptionVariables>;
export const DashboardCountsDocument = new TypedDocumentString(`
    query DashboardCounts {
  statusCounts {
    ...DashboardCount
  }
}
    fragment DashboardCount on StatusCount {
  at
  up
  late
  silent
}`, {"hash":"sha256:162f2c976862d50b2f3bf11f48abfcf12909618abf8ccb9a4980b65b4414fa60"}) as unknown as TypedDocumentString<DashboardCountsQuery, DashboardCountsQueryVariables>;
export const DashboardPastDocument = new TypedDocumentString(`
    query DashboardPast($at: DateTime) {
  statusAt(at: $at) {
    seq
    composedAt
    machines {
      ...DashboardMachine
    }
  }
}
    fragment DashboardMachine on MachineStatus {
  name
  site
  state
  lastHeardAt
  modules
  holdings {
    seat
    module
    derived
  }
}`, {"hash":"sha256:844e68efb5671adeda488516d9c06f86e184ac63c317787f95f3ad152ef5a64a"}) as unknown as TypedDocumentString<DashboardPastQuery, DashboardPastQueryVariables>;
export const DashboardMachineHistoryDocument = new TypedDocumentString(`
    query DashboardMachineHistory($name: String!) {
  machineHistory(name: $name) {
    ... on QueryMachineHistorySuccess {
      data {
        ...DashboardMachineChange
      }
    }
    ... on Error {
      message
    }
  }
}
    fragment DashboardMachineChange on MachineStateChange {
  seq
  at
  state
}`, {"hash":"sha256:862d83a6db41dd18720edc3ff169fd7ea58c08db5f87d0b193b68509d937efaf"}) as unknown as TypedDocumentString<DashboardMachineHistoryQuery, DashboardMachineHistoryQueryVariables>;
// The operations the dashboard sends. The same fields are selected in `full` and in a delta's
// items, as docs/status-deltas.md asks: a changed item replaces the one held, whole.

const MACHINE = 'name site state lastHeardAt modules holdings { seat module derived }';
const SEAT = 'name held holders { machine module site derived }';
const PLAN = 'id seat build state tier tiers stopReason openedAt endedAt behind';
const CAUSE = 'cause count firstAt lastAt';
const changes = (item: string) => `{ added { ${item} } addedAt changed { ${item} } removed order }`;

export const STATUS_CHANGES = `subscription Dashboard($after: Int) {
  statusChanges(after: $after) {
    seq baseSeq
    full {
      seq composedAt heardUntil tookMs trigger callsRunning handActsThisWeek unheldSeats
      machines { ${MACHINE} } seats { ${SEAT} } plans { ${PLAN} } repeatedCauses { ${CAUSE} }
    }
    delta {
      seq baseSeq composedAt heardUntil tookMs trigger callsRunning handActsThisWeek
      machines ${changes(MACHINE)}
      seats ${changes(SEAT)}
      plans ${changes(PLAN)}
      repeatedCauses ${changes(CAUSE)}
      unheldSeats { added addedAt removed order }
    }
  }
}`;

export const DURATIONS = `query DashboardDurations { durations { kind count p50 p90 p99 bound exceeded } }`;

export const CALLS_RUNNING = `query DashboardCalls {
  calls(state: RUNNING, first: 20) { edges { node { id seat verb caller door startedAt } } }
}`;

export const HAND_ACTS = `query DashboardHandActs($since: DateTime) {
  handActs(since: $since, first: 15) { edges { node { id at actor act target why cause } } }
}`;

export const PLAN_APPLIES = `query DashboardPlans { plans(first: 50) { id applies { machine tier ok reportedAt } } }`;

import { Gauge, type Registry } from 'prom-client';
import { CALL_STATES, refusedCalls } from '../../services/calls/records.js';
import type { Mesh } from '../../services/mesh.js';
import { recordRelayLag } from '../../services/outbox/outbox.js';
import { CALL_DOORS } from '../../services/verbs/verb.js';
import { readCounts, readGauge } from './read.js';

/** The calls: those refused before any work, the records waiting in the outbox, and the calls kept by state and door. */
export function callMetrics(registry: Registry, mesh: Pick<Mesh, 'status' | 'views'>): void {
  readCounts(
    registry,
    'mesh_calls_refused_total',
    'Calls refused before any work (bad arguments, unknown verb, BUSY), by error code: counted, never kept.',
    'code',
    () => refusedCalls(mesh),
  );
  readGauge(
    registry,
    'mesh_record_outbox_waiting',
    'Hand-acts and call records committed with their acts, not yet relayed to the buckets.',
    () => recordRelayLag().waiting,
  );
  readGauge(
    registry,
    'mesh_record_outbox_oldest_seconds',
    'Age of the oldest record waiting in the outbox; 0 when none waits.',
    () => recordRelayLag().oldestMs / 1000,
  );
  callsKept(registry, mesh);
  readGauge(registry, 'mesh_calls_running', 'Calls RUNNING, as the last composition counted them.', () => mesh.status.current()?.callsRunning);
}

/** The calls in this replica's view, by state and door: every pair shown, 0 included. */
function callsKept(registry: Registry, mesh: Pick<Mesh, 'views'>): void {
  new Gauge({
    name: 'mesh_calls',
    help: "Calls in this replica's view of the calls bucket, by state and door.",
    labelNames: ['state', 'door'],
    registers: [registry],
    collect() {
      const counts = new Map<string, number>();
      for (const state of CALL_STATES) for (const door of CALL_DOORS) counts.set(`${state} ${door}`, 0);
      for (const { value } of mesh.views.calls.values()) counts.set(`${value.state} ${value.door}`, (counts.get(`${value.state} ${value.door}`) ?? 0) + 1);
      for (const [key, count] of counts) {
        const [state, door] = key.split(' ') as [string, string];
        this.set({ state, door }, count);
      }
    },
  });
}

import type { Registry } from 'prom-client';
import type { Mesh } from '../../services/mesh.js';
import type { Health } from '../health.js';
import { escapedCounts } from '../last-resort.js';
import { readCounts, readGauge } from './read.js';

/** The gateway's own state: whether it serves, whether NATS and the store answer, whether it is ready, and what escaped every guard. */
export function healthMetrics(registry: Registry, mesh: Pick<Mesh, 'leases'>, health: Health): void {
  readGauge(registry, 'mesh_serving_lease', '1 while this replica holds the serving lease (it composes).', () => (mesh.leases.isServing() ? 1 : 0));
  readGauge(registry, 'mesh_nats_connected', '1 while the NATS connection is up.', () => (health.nats().ok ? 1 : 0));
  readGauge(registry, 'mesh_store_connected', '1 while the store answers select 1 (within STORE_CHECK_TIMEOUT_MS).', async () =>
    (await health.store()).ok ? 1 : 0,
  );
  readGauge(registry, 'mesh_ready', '1 while /ready would answer 200 (draining aside).', async () =>
    Object.values(await health.checks()).every((c) => c.ok) ? 1 : 0,
  );
  readCounts(
    registry,
    'mesh_uncaught_total',
    'Errors that escaped every guard and reached the last resort (logged at error; the process goes on serving), by place. Should stay 0.',
    'place',
    escapedCounts,
  );
}

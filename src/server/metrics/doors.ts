import type { Registry } from 'prom-client';
import { natsOpenBehindClosedDoors } from '../../services/access/open-nats.js';
import { NATS_REFUSALS, type Responder } from '../../services/controller/responder.js';
import type { Mesh } from '../../services/mesh.js';
import { STATUS_REFUSALS } from '../../services/status/replicating/wire.js';
import { readCounts, readGauge } from './read.js';

/** The NATS doors: what they refused before any work, by reason, and whether NATS lets anyone in while the HTTP doors do not. */
export function doorMetrics(
  registry: Registry,
  mesh: Pick<Mesh, 'config' | 'statusSeal'> & { bus: Pick<Mesh['bus'], 'authRequired'> },
  responder: Pick<Responder, 'refused'> | undefined,
): void {
  readCounts(
    registry,
    'mesh_nats_refused_total',
    "NATS requests to the controller refused before they became calls (not kept), by reason: unnamed, scope, unknown-verb, unproven (on the controller's own subject without a replica's proof).",
    'reason',
    () => {
      const refused = responder?.refused();
      return NATS_REFUSALS.map((reason) => [reason, refused?.[reason] ?? 0] as const);
    },
  );
  readGauge(
    registry,
    'mesh_nats_open',
    'Whether the NATS server accepts any client (auth_required false) while the HTTP doors require tokens: 1 open (see docs/access.md), 0 not.',
    () => (natsOpenBehindClosedDoors(mesh.config, mesh.bus) ? 1 : 0),
  );
  readCounts(
    registry,
    'mesh_status_refused_total',
    'Status messages (compositions, deltas) this replica refused, by reason: unsealed, forged, not-serving, stale-term, seq-out-of-bounds, seq-jump, too-large, malformed.',
    'reason',
    () => {
      const refused = mesh.statusSeal.refused();
      return STATUS_REFUSALS.map((reason) => [reason, refused[reason]] as const);
    },
  );
}

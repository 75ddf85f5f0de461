import type { Leases } from '../../replicas/leases.js';

/** What the composer needs of the serving lease (src/services/replicas/leases.ts). */
export type ServingLease = Pick<Leases, 'isServing' | 'onServingChange'>;

import type { Verb } from './protocol.js';

/**
 * The controller's own verbs, defined once: its seat row is seeded from this table, the GraphQL
 * mutations and the NATS responder are built from it. Empty until the calls issue lands.
 */
export const CONTROLLER_VERBS: Verb[] = [];

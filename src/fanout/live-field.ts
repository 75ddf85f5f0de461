import type { Composition } from '../services/status/composition.js';
import type { StatusDelta } from '../services/status/delta/delta.js';

/** How one root subscription field turns compositions into the root values it executes over. */
export interface LiveField {
  /** The root value for the whole composition: what a new subscriber, or one that skipped, gets. */
  full(composition: Composition): unknown;
  /** The root value for a delta; absent when every message is the whole composition. */
  change?(delta: StatusDelta): unknown;
}

export type MaybePromise<T> = T | Promise<T>;

import type { Composition } from '../composition.js';
import type { Delta } from './algebra.js';

// The gateway's side of the delta algebra (algebra.ts, pure and generic): its deltas are of its
// `Composition`, and a `statusChanges` message carries a whole one or a delta.

export { applyDelta, deltaIsEmpty, diffCompositions } from './algebra.js';
export { applyListChanges, diffList, type ListChanges, sameJson } from './lists.js';

/** What changed from the composition `baseSeq` to the composition `seq` (algebra.ts, `Delta`). */
export type StatusDelta = Delta<Composition>;

/**
 * One message of a change stream: the whole composition (the first, and after any gap), or a delta
 * bringing a holder of `baseSeq` to `seq`.
 */
export interface StatusChange {
  seq: number;
  baseSeq: number | null;
  full: Composition | null;
  delta: StatusDelta | null;
}

export const fullChange = (composition: Composition): StatusChange => ({ seq: composition.seq, baseSeq: null, full: composition, delta: null });
export const deltaChange = (delta: StatusDelta): StatusChange => ({ seq: delta.seq, baseSeq: delta.baseSeq, full: null, delta });

import { deltaChange, fullChange } from '../services/status/delta/delta.js';
import type { LiveField } from './live-field.js';

/**
 * The live status subscriptions and what each executes over: `status` resolves a composition as
 * its root value; `statusChanges` a StatusChange, whole or delta.
 */
export const LIVE_STATUS_FIELDS: Record<string, LiveField> = {
  status: { full: (composition) => composition },
  statusChanges: { full: fullChange, change: deltaChange },
};

/** Root query fields answered from the composition alone, so their responses can be kept per composition. */
export const STATUS_QUERY_FIELDS = ['status'] as const;

import { canonical } from '../kernel/canonical-json.js';
import type { Caller } from '../services/access/caller.js';

/** Who the caller is, as far as sharing goes: its name and its scopes. */
const accessKey = (caller: Caller): string => `${caller.name}:${[...caller.scopes].sort().join(',')}`;

/** What an operation is asked with: its document text, operation name and variables. */
export interface OperationParams {
  query: string;
  operationName?: unknown;
  variables?: unknown;
}

/**
 * The one key under which alike operations share work — a fan-out group, a kept status response:
 * the caller (name and scopes), the operation name, the variables (canonical JSON) and the text.
 */
export function operationKey(caller: Caller, params: OperationParams): string {
  const variables = params.variables && typeof params.variables === 'object' ? params.variables : {};
  return `${accessKey(caller)}\u0000${params.operationName ?? ''}\u0000${canonical(variables)}\u0000${params.query}`;
}

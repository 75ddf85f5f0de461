import type { Caller } from '../../services/access/caller.js';
import type { Access } from '../../services/access/tokens.js';

/** The caller an Authorization names, or why it names none. */
export type CallerVerdict = { caller: Caller; refusal?: undefined } | { caller?: undefined; refusal: string };

/**
 * Judges an Authorization against the tokens as last read: its caller, or the reason it names
 * none (no bearer, unknown, a JWT refused at its admission or expired). `admission` is the refusal
 * `access.admit` gave this request's JWT, if any. Never throws.
 */
export function judgeCaller(access: Access, authorization: string | null | undefined, admission?: string): CallerVerdict {
  if (admission !== undefined) return { refusal: admission };
  try {
    return { caller: access.callerFor(authorization) };
  } catch (error) {
    return { refusal: (error as Error).message };
  }
}

/** "A caller or nothing": the caller an Authorization names, undefined when it names none. */
export const callerOrNothing = (access: Access, authorization: string | null | undefined): Caller | undefined => judgeCaller(access, authorization).caller;

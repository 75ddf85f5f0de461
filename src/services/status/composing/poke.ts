import { isName } from '../../../kernel/names.js';

/** Where any replica asks the serving one for a composition: body `{"triggers":["news",…]}`. */
export const composeSubject = (root: string): string => `${root}.compose`;

/** A request on `<subjects>.compose` names at most this many machines (200 characters each at most: ~200 KB). */
export const POKE_MACHINES_MAX = 1_000;

/**
 * A request on `<subjects>.compose`: its triggers (at most 10 names of lowercase letters and '-';
 * `asked` when none) and the machines it names (undefined, so a full composition, when absent or
 * not a list of at most POKE_MACHINES_MAX names).
 */
export function readPoke(data: Uint8Array): { triggers: string[]; machines: string[] | undefined } {
  let body: { triggers?: unknown; machines?: unknown } | null = null;
  try {
    body = JSON.parse(new TextDecoder().decode(data));
  } catch {
    body = null;
  }
  const asked = body?.triggers;
  const triggers = Array.isArray(asked) ? asked.filter((t): t is string => typeof t === 'string' && /^[a-z-]{1,40}$/.test(t)).slice(0, 10) : [];
  const machines = body?.machines;
  const named = Array.isArray(machines) && machines.length <= POKE_MACHINES_MAX && machines.every(isName) ? (machines as string[]) : undefined;
  return { triggers: triggers.length ? triggers : ['asked'], machines: named };
}

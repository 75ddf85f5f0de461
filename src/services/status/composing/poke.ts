import { isName } from '../../../kernel/names.js';

/**
 * Why a composition is asked: the serving replica taking the lease (`start`, `takeover`; `resumed`
 * when it takes it back in the term it lapsed in, asked of its own composer only), every
 * minute, news (with the machines it wrote), machines heard later in this replica's memory (`heard`:
 * asked of its own composer only, never over NATS), build news, an acting verb, a plan changed, a machine
 * crossing LATE or SILENT, a replica joining or fetching a snapshot after a gap (`resync`), a
 * failed composition asked again, a request naming none or one this gateway does not know (`asked`).
 */
export const COMPOSE_TRIGGERS = [
  'start',
  'takeover',
  'resumed',
  'minute',
  'news',
  'heard',
  'build',
  'acted',
  'plan',
  'state-change',
  'replica-joined',
  'resync',
  'retry',
  'asked',
] as const;
export type ComposeTrigger = (typeof COMPOSE_TRIGGERS)[number];

const isComposeTrigger = (name: string): name is ComposeTrigger => (COMPOSE_TRIGGERS as readonly string[]).includes(name);

/** Where a replica that does not serve asks the serving one for a composition: body `pokeBody` makes. */
export const composeSubject = (root: string): string => `${root}.compose`;

/** A request on `<subjects>.compose` names at most this many machines (200 characters each at most: ~200 KB). */
export const POKE_MACHINES_MAX = 1_000;

/**
 * A request on `<subjects>.compose`, as every replica sends it (`pokeBody` is the one way to make
 * one): its triggers and the machines news wrote, always sent, even none (`news` without them, an
 * older gateway's, asks a full composition). At most POKE_MACHINES_MAX machines a request.
 */
export function pokeBody(triggers: readonly ComposeTrigger[], machines: readonly string[] = []): string {
  return JSON.stringify({ triggers, machines });
}

/**
 * A request on `<subjects>.compose`: its triggers (at most 10 names of lowercase letters and '-';
 * `asked` in place of one this gateway does not know, and when none) and the machines it names
 * (undefined, so a full composition, when absent or not a list of at most POKE_MACHINES_MAX names).
 */
export function readPoke(data: Uint8Array): { triggers: ComposeTrigger[]; machines: string[] | undefined } {
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
  const known = [...new Set(triggers.map((t) => (isComposeTrigger(t) ? t : 'asked')))];
  return { triggers: known.length ? known : ['asked'], machines: named };
}

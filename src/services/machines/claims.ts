import type { Logger } from 'pino';
import type { Heartbeat } from './machines.js';

/**
 * Heartbeats as they may be believed: a machine's claim of the controller's own seat is dropped and
 * logged at warn. Claims are self-asserted by the agent, and a seat with no holding on record is
 * held by whoever claims it, so one agent could otherwise make itself the controller's derived holder.
 */
export function withoutControllerClaims(beats: readonly Heartbeat[], mesh: { config: { controller: string }; logger: Logger }): Heartbeat[] {
  const seat = mesh.config.controller;
  return beats.map((beat) => {
    if (!beat.claims || !Object.values(beat.claims).some((seats) => seats.includes(seat))) return beat;
    const claims = Object.fromEntries(Object.entries(beat.claims).map(([module, seats]) => [module, seats.filter((s) => s !== seat)]));
    mesh.logger.warn({ machine: beat.machine, seat }, "a machine claimed the controller's own seat: the claim is ignored");
    return { ...beat, claims };
  });
}

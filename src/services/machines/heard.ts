/**
 * When each machine was last heard as this replica's memory holds it (src/services/news/hearing.ts):
 * the store keeps only a checkpoint of it (issue 37), never later than the truth.
 */
export interface HeardOf {
  lastMs(machine: string): number | undefined;
}

/** A machine with the later of its stored last-heard and what `heard` holds: what every reader shows and judges. */
export function withHeard<M extends { name: string; lastHeardAt: Date }>(machine: M, heard: HeardOf | undefined): M {
  const ms = heard?.lastMs(machine.name);
  return ms !== undefined && ms > machine.lastHeardAt.getTime() ? { ...machine, lastHeardAt: new Date(ms) } : machine;
}

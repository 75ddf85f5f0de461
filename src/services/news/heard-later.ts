import type { HeardMachines } from './heard-machines.js';

/** Machines heard later are gathered this long into one call of each `onHeard` listener. */
export const HEARD_GATHER_MS = 10;

/**
 * Gathers the machines `machines` hears later HEARD_GATHER_MS into one call of each listener; with
 * no listener that wants them nothing is gathered (a replica that does not serve hears every beat,
 * and gathering them for nothing was 1% of it). The set holds each machine once, so it is bounded by the mesh.
 */
export function gatherHeardLater(machines: HeardMachines): {
  listen(listener: (names: readonly string[]) => void, wanted?: () => boolean): () => void;
  stop(): void;
} {
  const listeners = new Map<(names: readonly string[]) => void, () => boolean>();
  /** The listeners' `wanted`, as an array: asked at every beat. */
  let wants: (() => boolean)[] = [];
  const wantedByAny = () => {
    for (let i = 0; i < wants.length; i++) if (wants[i]!()) return true;
    return false;
  };
  const gathered = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  const tell = () => {
    timer = undefined;
    const names = [...gathered];
    gathered.clear();
    for (const listener of listeners.keys()) listener(names);
  };
  machines.onLater = (machine) => {
    if (!wantedByAny()) return;
    gathered.add(machine);
    timer ??= setTimeout(tell, HEARD_GATHER_MS);
  };
  return {
    listen(listener, wanted = () => true) {
      listeners.set(listener, wanted);
      wants = [...listeners.values()];
      return () => {
        listeners.delete(listener);
        wants = [...listeners.values()];
      };
    },
    stop() {
      machines.onLater = undefined;
      listeners.clear();
      wants = [];
      if (timer) clearTimeout(timer);
      gathered.clear();
    },
  };
}

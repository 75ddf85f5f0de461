import type { NatsConnection } from '@nats-io/transport-node';
import type { MeshEvents } from '../../events.js';
import { type ComposeTrigger, composeSubject, POKE_MACHINES_MAX, pokeBody, readPoke } from './poke.js';

/** Local triggers are gathered this long into one request to the serving replica. */
export const POKE_GATHER_MS = 10;

/** Where pokes go: this replica's own composer while it serves, else the serving one over NATS. */
export interface PokeRoute {
  nc: Pick<NatsConnection, 'publish' | 'subscribe'>;
  /** The mesh's subject root: requests travel on `<root>.compose`. */
  root: string;
  serving(): boolean;
  /** This replica's own composer's request. */
  request(trigger: ComposeTrigger, machines?: readonly string[]): void;
}

export interface PokeGathering {
  /** Asks the serving replica, wherever it is, for a composition: gathered POKE_GATHER_MS, then sent. */
  poke(trigger: ComposeTrigger, machines?: readonly string[]): void;
  stop(): void;
}

/**
 * Gathers this replica's triggers POKE_GATHER_MS into one request to the serving replica, hears
 * those sent to it on `<root>.compose` while it serves, and pokes on the mesh's events (news,
 * acting verbs, plans changed).
 */
export function gatherPokes(route: PokeRoute, events: MeshEvents): PokeGathering {
  const gathered = gatherLocal(route);
  const heard = route.nc.subscribe(composeSubject(route.root), {
    callback: (err, msg) => {
      if (err || !route.serving()) return;
      const { triggers: names, machines } = readPoke(msg.data);
      for (const t of names) route.request(t, t === 'news' ? machines : undefined);
    },
  });
  const offEvents = pokeOnEvents(events, gathered.poke);
  return {
    poke: gathered.poke,
    stop() {
      gathered.stop();
      heard.unsubscribe();
      offEvents();
    },
  };
}

// The machines news named travel with the triggers, POKE_MACHINES_MAX a message. The serving
// replica asks its own composer: a round trip through NATS to itself would only add latency.
function gatherLocal(route: PokeRoute): PokeGathering {
  const pokes = new Set<ComposeTrigger>();
  const poked = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const send = () => {
    timer = undefined;
    const names = [...poked];
    const asked = [...pokes];
    pokes.clear();
    poked.clear();
    if (route.serving()) {
      for (const t of asked) route.request(t, t === 'news' ? names : undefined);
      return;
    }
    const subject = composeSubject(route.root);
    for (let i = 0; i === 0 || i < names.length; i += POKE_MACHINES_MAX) route.nc.publish(subject, pokeBody(asked, names.slice(i, i + POKE_MACHINES_MAX)));
  };
  return {
    poke(trigger, machines) {
      if (stopped) return;
      pokes.add(trigger);
      for (const m of machines ?? []) poked.add(m);
      timer ??= setTimeout(send, POKE_GATHER_MS);
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}

// News asks with the machines it wrote (build news without), acting verbs and plans changed alike.
function pokeOnEvents(events: MeshEvents, poke: PokeGathering['poke']): () => void {
  const onNews = (kind: 'machine' | 'build', machines?: readonly string[]) => (kind === 'build' ? poke('build') : poke('news', machines ?? []));
  const onActed = () => poke('acted');
  const onPlan = () => poke('plan');
  events.on('news', onNews);
  events.on('acted', onActed);
  events.on('plan-changed', onPlan);
  return () => {
    events.off('news', onNews);
    events.off('acted', onActed);
    events.off('plan-changed', onPlan);
  };
}

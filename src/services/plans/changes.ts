import type { Logger } from 'pino';
import type { Bus } from '../../bus/nats.js';
import type { Subjects } from '../../bus/subjects.js';
import { LiveQueue } from '../../kernel/live-queue.js';
import type { Store } from '../../store/db.js';
import type { MeshEvents } from '../events.js';
import { type Plan, planById } from './plan.js';

/** What announcing and following plan changes needs of the mesh. */
export interface PlanChangesMesh {
  db: Store;
  bus: Pick<Bus, 'nc'>;
  subjects: Pick<Subjects, 'planChanged' | 'allPlanChanges'>;
  events: MeshEvents;
  logger: Logger;
}

export interface PlanChanges {
  /**
   * Follows plans as their state, tier or applies change, whichever replica changed them: one
   * plan's (first as it is now, so a follower that comes late or comes back misses no state), or
   * every plan's from now. NotFound for an unknown id. A follower that lets LIVE_WAITING_MAX wait is dropped.
   */
  follow(id?: string | null): Promise<LiveQueue<Plan>>;
  stop(): void;
}

/**
 * Announces each plan change this replica makes on `<subjects>.plan.<id>.changed` and hears every
 * replica's there: plans live in the store, so the subject is how a change made on one replica
 * reaches the followers of another. A change heard is read once per replica, and only when
 * someone follows it; changes of one plan heard while it is being read are read once more after,
 * so a follower always ends on the plan as it is.
 */
export function startPlanChanges(mesh: PlanChangesMesh): PlanChanges {
  const followers = new Set<{ id?: string; queue: LiveQueue<Plan> }>();
  const reading = new Set<string>();
  const again = new Set<string>();
  const announce = (id: string) => mesh.bus.nc.publish(mesh.subjects.planChanged(id));
  mesh.events.on('plan-changed', announce);

  const wanted = (id: string) => [...followers].some((f) => f.id === undefined || f.id === id);
  async function heard(id: string): Promise<void> {
    if (!wanted(id)) return;
    if (reading.has(id)) {
      again.add(id);
      return;
    }
    reading.add(id);
    try {
      do {
        again.delete(id);
        const plan = await planById(mesh.db, id);
        for (const f of followers) if (f.id === undefined || f.id === id) f.queue.push(plan);
      } while (again.has(id));
    } catch (err) {
      mesh.logger.warn({ err, plan: id }, 'a changed plan could not be read for its followers');
    } finally {
      reading.delete(id);
      again.delete(id);
    }
  }
  const subscription = mesh.bus.nc.subscribe(mesh.subjects.allPlanChanges, {
    callback: (err, msg) => {
      if (err) return;
      const id = msg.subject.split('.').at(-2);
      if (id) void heard(id);
    },
  });

  return {
    async follow(id) {
      // Heard before the plan is read, so no change falls between the two.
      let now: Promise<Plan> | undefined;
      const follower = { id: id ?? undefined, queue: undefined as unknown as LiveQueue<Plan> };
      const first = async function* () {
        if (now) yield await now;
      };
      follower.queue = new LiveQueue<Plan>(id == null ? undefined : first(), () => followers.delete(follower));
      followers.add(follower);
      if (id != null) {
        now = planById(mesh.db, id);
        await now.catch((error) => {
          void follower.queue.return();
          throw error;
        });
      }
      return follower.queue;
    },
    stop() {
      mesh.events.off('plan-changed', announce);
      subscription.unsubscribe();
      for (const f of followers) void f.queue.return();
    },
  };
}

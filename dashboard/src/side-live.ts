import type { Client } from 'graphql-ws';
import {
  type DashboardAppliesFragment,
  DashboardCallChangedDocument,
  type DashboardCallChangedSubscription,
  DashboardHandActAddedDocument,
  type DashboardHandActAddedSubscription,
  DashboardPlanChangedDocument,
  type DashboardPlanChangedSubscription,
  type DashboardHandActFragment as HandActRow,
  type DashboardRunningCallFragment as RunningCall,
} from './generated/graphql.js';

/** The hand-acts shown: the newest this many. */
const HAND_ACTS_SHOWN = 15;
/** Calls kept running on the page at most (the panel shows the first 20). */
const CALLS_KEPT = 200;
const RESUBSCRIBE_AFTER_MS = 1_000;

export interface SideHandlers {
  onApplies(planId: string, applies: DashboardAppliesFragment['applies']): void;
  onCalls(running: RunningCall[]): void;
  onHandActs(acts: HandActRow[]): void;
}

/**
 * Plans' applies, calls running and hand-acts follow `planChanged`, `callChanged` and
 * `handActAdded` on the page's one socket, instead of being asked for again: an idle page sends no
 * request. On a new socket each resumes from what it holds (the newest hand-act's id, the last
 * call change's cursor). `seed*` take what one query answered when the page (re)loads whole.
 */
export class SideLive {
  private readonly running = new Map<string, RunningCall>();
  private acts: HandActRow[] = [];
  private callCursor: string | undefined;
  /** The page's current socket: a subscription the gateway ended (a slow subscriber dropped) is made again on it. */
  private socket: Client | undefined;

  constructor(private readonly handlers: SideHandlers) {}

  seedCalls(calls: RunningCall[]): void {
    this.running.clear();
    for (const c of calls) this.running.set(c.id, c);
    this.handlers.onCalls(this.list());
  }

  seedHandActs(acts: HandActRow[]): void {
    this.acts = acts.slice(0, HAND_ACTS_SHOWN);
    this.handlers.onHandActs(this.acts);
  }

  follow(socket: Client): void {
    this.socket = socket;
    this.followPlans(socket);
    this.followCalls(socket);
    this.followHandActs(socket);
  }

  /** When the gateway completes one of these (it drops a subscriber that fell behind), it is made again, from the cursor held. */
  private again(socket: Client, follow: (socket: Client) => void): () => void {
    return () => {
      if (this.socket === socket) setTimeout(() => this.socket === socket && follow(socket), RESUBSCRIBE_AFTER_MS);
    };
  }

  private followPlans(socket: Client): void {
    socket.subscribe<DashboardPlanChangedSubscription>(
      { query: DashboardPlanChangedDocument.toString() },
      {
        next: (r) => {
          const plan = r.data?.planChanged;
          if (plan) this.handlers.onApplies(plan.id, plan.applies);
        },
        error: () => undefined,
        complete: this.again(socket, (s) => this.followPlans(s)),
      },
    );
  }

  private followCalls(socket: Client): void {
    socket.subscribe<DashboardCallChangedSubscription>(
      { query: DashboardCallChangedDocument.toString(), variables: this.callCursor ? { after: this.callCursor } : {} },
      {
        next: (r) => {
          const call = r.data?.callChanged;
          if (!call) return;
          if (call.cursor) this.callCursor = call.cursor;
          if (call.state === 'RUNNING') this.running.set(call.id, call);
          else this.running.delete(call.id);
          while (this.running.size > CALLS_KEPT) this.running.delete(this.running.keys().next().value!);
          this.handlers.onCalls(this.list());
        },
        error: () => undefined,
        complete: this.again(socket, (s) => this.followCalls(s)),
      },
    );
  }

  private followHandActs(socket: Client): void {
    const newest = this.acts[0]?.id;
    socket.subscribe<DashboardHandActAddedSubscription>(
      { query: DashboardHandActAddedDocument.toString(), variables: newest ? { after: newest } : {} },
      {
        next: (r) => {
          const act = r.data?.handActAdded;
          if (!act || this.acts.some((a) => a.id === act.id)) return;
          this.acts = [act, ...this.acts].sort((a, b) => (a.id < b.id ? 1 : -1)).slice(0, HAND_ACTS_SHOWN);
          this.handlers.onHandActs(this.acts);
        },
        error: () => undefined,
        complete: this.again(socket, (s) => this.followHandActs(s)),
      },
    );
  }

  private list(): RunningCall[] {
    return [...this.running.values()].sort((a, b) => (a.startedAt < b.startedAt ? 1 : -1));
  }
}

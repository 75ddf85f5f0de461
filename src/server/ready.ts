import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Check, Health } from './health.js';

/** What a draining replica asks clients to wait before retrying: about the time a balancer takes to stop sending here. */
export const DRAIN_RETRY_AFTER_S = 5;

/** The whole answer of `GET /health`: the process serves. */
export const HEALTH_ANSWER = { ok: true } as const;

/** The answer of `GET /ready`: ready when not draining and every named check passes. */
interface Readiness {
  ready: boolean;
  /** True from SIGTERM on: the replica finishes what it has and takes nothing new. */
  draining: boolean;
  replica: string;
  /** `store` (answers `select 1`), `nats` (connected), `composition` (heard within COMPOSITION_STALE_MS). */
  checks: Record<string, Check>;
}

/** `GET /ready`: 200 `{"ready":true,…}` while this replica takes operations and every check passes; 503 otherwise, at once while it drains. */
async function readiness(state: { draining: boolean; replica: string; health?: Health }): Promise<{ status: 200 | 503; body: Readiness }> {
  const checks = state.health ? await state.health.checks() : {};
  const ready = !state.draining && Object.values(checks).every((check) => check.ok);
  return { status: ready ? 200 : 503, body: { ready, draining: state.draining, replica: state.replica, checks } };
}

/**
 * The HTTP side of a graceful stop: answers `/ready`, counts the requests in flight, and once
 * `begin()` is called `/ready` answers 503 while those in flight finish (the drain guard, guards/arrival.ts, refuses new ones).
 */
export interface Drain {
  readonly draining: boolean;
  /** Starts draining: `/ready` 503, new requests 503, and each `onBegin` listener called (live streams end). */
  begin(): void;
  /** Calls `listener` when the drain begins. */
  onBegin(listener: () => void): void;
  /** How many HTTP requests are being answered. */
  inFlight(): number;
  /** Resolves once no HTTP request is in flight. */
  idle(): Promise<void>;
  /** Wraps the app's request listener with `/ready`, the count and the refusal. */
  handler(next: RequestListener): RequestListener;
}

/**
 * `health` gives `/ready` its checks; without it (tests of the drain alone) readiness is only "not
 * draining". `mayDetail` says whether a request may see the details (replica, checks, their
 * errors): without it, or when it says no, `/ready` answers only `{"ready":…}` and its status.
 */
export function createDrain(replica: string, health?: Health, mayDetail: (req: IncomingMessage) => boolean = () => true): Drain {
  let draining = false;
  let inFlight = 0;
  const beginListeners: (() => void)[] = [];
  // At most one waiter per stop: the gateway's drain.
  let waiters: (() => void)[] = [];
  const settle = () => {
    if (inFlight > 0) return;
    const ready = waiters;
    waiters = [];
    for (const resolve of ready) resolve();
  };
  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers });
    res.end(JSON.stringify(body));
  };
  return {
    get draining() {
      return draining;
    },
    begin() {
      if (draining) return;
      draining = true;
      for (const listener of beginListeners) listener();
    },
    onBegin(listener) {
      beginListeners.push(listener);
    },
    inFlight: () => inFlight,
    idle: () => (inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
    handler: (next) => (req: IncomingMessage, res: ServerResponse) => {
      const path = (req.url ?? '').split('?')[0];
      if ((path === '/ready' || path === '/health') && (req.method === 'GET' || req.method === 'HEAD')) {
        // The process serves: a draining replica is alive too (its balancer reads /ready). Nothing
        // more to an anonymous caller (no name, no uptime, no draining): /ready's details need a token.
        if (path === '/health') return json(res, 200, HEALTH_ANSWER);
        // The replica's name, NATS address and the store's error text are for operators: a balancer needs only the status.
        const detailed = mayDetail(req);
        const body = (answer: Readiness) => (detailed ? answer : { ready: answer.ready });
        // Draining answers at once, checks or not: the balancer must stop sending here now.
        if (draining) return json(res, 503, body({ ready: false, draining, replica, checks: {} }));
        void readiness({ draining, replica, health }).then(
          (answer) => json(res, answer.status, body(answer.body)),
          (error) => json(res, 503, body({ ready: false, draining, replica, checks: { error: { ok: false, error: String(error) } } })),
        );
        return;
      }
      // Every response is counted while it is answered, a stream (SSE, multipart/mixed) too: one
      // running a subscription is ended when the drain begins (live-doors.ts), so it holds the drain
      // only while it streams; a query or mutation answered as a stream is waited for like any other.
      inFlight++;
      let counted = true;
      const finish = () => {
        if (!counted) return;
        counted = false;
        inFlight--;
        settle();
      };
      res.once('finish', finish);
      res.once('close', finish);
      next(req, res);
    },
  };
}

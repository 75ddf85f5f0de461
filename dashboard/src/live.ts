import { type Client, createClient } from 'graphql-ws';
import { tryApplyDelta } from '../../src/services/status/delta/algebra.js';
import {
  DashboardDocument,
  type DashboardSubscription,
  type DashboardStatusFragment as Status,
  type DashboardDeltaFragment as StatusDelta,
} from './generated/graphql.js';

/** What the connection indicator shows. */
export type Connection = 'connecting' | 'live' | 'reconnecting' | 'refused';

export interface LiveOptions {
  /** The graphql-ws address, ws://host/graphql. */
  url: string;
  /** The token to present, when the person gave one. */
  token(): string | undefined;
  /** A whole composition: replace everything shown. */
  onFull(status: Status): void;
  /** A delta applied to the composition held: update only what it names. */
  onDelta(delta: StatusDelta, status: Status): void;
  onConnection(state: Connection, detail?: string): void;
  /** Each new socket, once it is made: other live panels subscribe on it too (one socket per page). */
  onSocket?(socket: Client): void;
}

/** The first wait before reconnecting; it doubles up to RECONNECT_MAX_MS. */
const RECONNECT_FIRST_MS = 500;
const RECONNECT_MAX_MS = 5_000;
/** graphql-ws's Forbidden: the gateway refused the token (or none was given where one is needed). */
const FORBIDDEN = 4403;

/**
 * The subscription a page holding composition `seqHeld` (undefined: none yet) sends on each
 * (re)connect: `after: seqHeld` resumes with the deltas since (merged into one), or a whole
 * composition when the gateway no longer keeps that seq (a restarted replica, a long absence).
 */
function changesRequest(seqHeld: number | undefined): { query: string; variables: Record<string, unknown> } {
  return { query: DashboardDocument.toString(), variables: seqHeld === undefined ? {} : { after: seqHeld } };
}

/**
 * Follows `statusChanges` over graphql-ws, holding one composition: a `full` replaces it, a delta
 * is applied with the gateway's own algebra (src/services/status/delta/algebra.ts). A delta it
 * refuses (its `baseSeq` is not the seq held, or it does not fit what is held) is never half
 * shown: the page forgets the composition and subscribes again, and is sent a whole one.
 * Reconnects by itself with backoff; a refused token waits for `restart()`.
 */
export function followStatus(options: LiveOptions): { restart(): void; held(): Status | undefined } {
  let held: Status | undefined;
  let client: Client | undefined;
  let wait = RECONNECT_FIRST_MS;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let generation = 0;

  const connect = () => {
    const mine = ++generation;
    clearTimeout(timer);
    void client?.dispose();
    options.onConnection(held ? 'reconnecting' : 'connecting');
    const token = options.token();
    const socket = createClient({
      url: options.url,
      lazy: false,
      retryAttempts: 0,
      connectionParams: token ? { authorization: `Bearer ${token}` } : {},
      onNonLazyError: () => undefined,
      on: {
        connected: () => {
          if (mine !== generation) return;
          wait = RECONNECT_FIRST_MS;
          options.onConnection('live');
        },
        closed: (event) => {
          if (mine !== generation) return;
          const code = (event as CloseEvent | undefined)?.code;
          if (code === FORBIDDEN) {
            // The gateway's reason (`Forbidden: the token expired at …`), so the person knows what to fix.
            const reason = (event as CloseEvent | undefined)?.reason?.replace(/^Forbidden:\s*/, '');
            options.onConnection(
              'refused',
              token ? `the gateway refused this token${reason && reason !== 'Forbidden' ? `: ${reason}` : ''}` : 'this gateway needs a token',
            );
            return;
          }
          options.onConnection('reconnecting', 'disconnected; reconnecting');
          timer = setTimeout(connect, wait);
          wait = Math.min(wait * 2, RECONNECT_MAX_MS);
        },
      },
    });
    client = socket;
    const subscribe = () => {
      let unsubscribe = () => {};
      unsubscribe = socket.subscribe<DashboardSubscription>(changesRequest(held?.seq), {
        next: (result) => {
          if (mine !== generation) return;
          const change = result.data?.statusChanges;
          if (!change) return;
          if (change.full) {
            held = change.full;
            options.onFull(held);
            return;
          }
          const next = change.delta ? tryApplyDelta(held, change.delta) : undefined;
          if (change.delta && next) {
            held = next;
            options.onDelta(change.delta, held);
            return;
          }
          // Refused, or a delta before any whole one (never sent to a correct client): start over from
          // nothing, so the next message is whole and the page never shows a composition half applied.
          held = undefined;
          unsubscribe();
          subscribe();
        },
        error: () => undefined,
        complete: () => undefined,
      });
    };
    subscribe();
    options.onSocket?.(socket);
  };
  connect();
  return { restart: connect, held: () => held };
}

import { type Client, createClient } from 'graphql-ws';
import { tryApplyDelta } from '../../src/services/status/delta/algebra.js';
import {
  DashboardDocument,
  DashboardSiteDocument,
  type DashboardSiteSubscription,
  DashboardSitesDocument,
  type DashboardSitesSubscription,
  type DashboardSubscription,
  type DashboardStatusFragment as Status,
  type DashboardDeltaFragment as StatusDelta,
} from './generated/graphql.js';

/** What the connection indicator shows. */
export type Connection = 'connecting' | 'live' | 'reconnecting' | 'refused';

/** What every way of following the status over the page's one socket is given. */
interface SocketOptions {
  /** The graphql-ws address, ws://host/graphql. */
  url: string;
  /** The token to present, when the person gave one. */
  token(): string | undefined;
  onConnection(state: Connection, detail?: string): void;
  /** Each new socket, once it is made: other live panels subscribe on it too (one socket per page). */
  onSocket?(socket: Client): void;
}

export interface LiveOptions extends SocketOptions {
  /** A whole composition: replace everything shown. */
  onFull(status: Status): void;
  /** A delta applied to the composition held: update only what it names. */
  onDelta(delta: StatusDelta, status: Status): void;
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
 * The page's one socket, made again with backoff whenever it closes; a refused token waits for
 * `restart()`. `onOpen` subscribes on each new socket; `current()` tells a subscription of an
 * older socket to fall silent; `reconnecting` is whether the page held something before.
 */
function keepSocket(
  options: SocketOptions,
  holding: () => boolean,
  onOpen: (socket: Client, current: () => boolean) => void,
): { restart(): void; socket(): Client | undefined } {
  let client: Client | undefined;
  let wait = RECONNECT_FIRST_MS;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let generation = 0;

  const connect = () => {
    const mine = ++generation;
    clearTimeout(timer);
    void client?.dispose();
    options.onConnection(holding() ? 'reconnecting' : 'connecting');
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
    onOpen(socket, () => mine === generation);
    options.onSocket?.(socket);
  };
  connect();
  return { restart: connect, socket: () => client };
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
  const { restart } = keepSocket(
    options,
    () => held !== undefined,
    (socket, current) => {
      const subscribe = () => {
        let unsubscribe = () => {};
        unsubscribe = socket.subscribe<DashboardSubscription>(changesRequest(held?.seq), {
          next: (result) => {
            if (!current()) return;
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
    },
  );
  return { restart, held: () => held };
}

/** The counts by site as the large mesh's page follows them. */
export type SitesStatus = DashboardSitesSubscription['status'];
/** One site's machines as the large mesh's page follows them. */
export type SiteStatus = DashboardSiteSubscription['status'];

export interface SitesOptions extends SocketOptions {
  /** At most one message per this many milliseconds, for the counts and for the site open alike. */
  everyMs: number;
  /** Each composition's counts by site. */
  onSites(status: SitesStatus): void;
  /** Each composition's machines of the site open (null: the machines of no site). */
  onSite(site: string | null, status: SiteStatus): void;
}

/**
 * The large mesh's live view (dashboard/src/sites.ts): `status(everyMs:)` selecting the counts by
 * site only, and, while a site is open, a second `status(everyMs:)` selecting that site's machines
 * (`machines(site:)`), on the same socket. Opening another site ends the first's subscription.
 */
export function followSites(options: SitesOptions): { restart(): void; held(): SitesStatus | undefined; open(site: string | null | undefined): void } {
  let held: SitesStatus | undefined;
  let opened: string | null | undefined;
  let endSite = () => {};
  const followSite = (socket: Client, current: () => boolean) => {
    endSite();
    endSite = () => {};
    if (opened === undefined) return;
    const site = opened;
    const stop = socket.subscribe<DashboardSiteSubscription>(
      { query: DashboardSiteDocument.toString(), variables: { site, everyMs: options.everyMs } },
      {
        next: (result) => {
          if (current() && opened === site && result.data) options.onSite(site, result.data.status);
        },
        error: () => undefined,
        complete: () => undefined,
      },
    );
    endSite = stop;
  };
  let onCurrent: () => boolean = () => false;
  const live = keepSocket(
    options,
    () => held !== undefined,
    (socket, current) => {
      onCurrent = current;
      socket.subscribe<DashboardSitesSubscription>(
        { query: DashboardSitesDocument.toString(), variables: { everyMs: options.everyMs } },
        {
          next: (result) => {
            if (!current() || !result.data) return;
            held = result.data.status;
            options.onSites(held);
          },
          error: () => undefined,
          complete: () => undefined,
        },
      );
      followSite(socket, current);
    },
  );
  return {
    restart: live.restart,
    held: () => held,
    open: (site) => {
      if (site === opened) return;
      opened = site;
      const socket = live.socket();
      if (socket) followSite(socket, onCurrent);
      else endSite();
    },
  };
}

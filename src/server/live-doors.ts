import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { Caller } from '../services/access/caller.js';
import { type Access, scopesShrank } from '../services/access/tokens.js';

/**
 * The rules every live door keeps alike, graphql-ws sockets and HTTP streams (SSE and
 * `multipart/mixed`, Yoga's incremental delivery): how many one caller and one address may hold
 * open, the end of one whose token expires or is revoked, and (for streams) the end of a
 * subscription when the replica drains. One registry, so a caller's sockets and streams count
 * against the same caps and one reload judges them all.
 */

/** The longest a Node timer waits. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** What a live door may hold open: MESH_WS_SOCKETS_PER_CALLER and MESH_WS_SOCKETS_PER_ADDRESS, sockets and streams together. */
export interface LiveCaps {
  socketsPerCaller: number;
  socketsPerAddress: number;
}

/** One open live connection as the registry judges it: its caller, its credentials, and how it is ended. */
interface LiveDoor {
  /** `WebSocket` or `SSE stream`/`multipart stream`, for the log. */
  kind: string;
  caller: Caller;
  authorization: string | undefined;
  /** When its token stops being one (a JWT's `exp`), epoch ms; undefined when never. */
  expiresAt: number | undefined;
  /** Ends it with a Forbidden reason (a socket: 4403; a stream: the connection cut). */
  end(reason: string): void;
  /** Its token still names the caller with as many scopes: the newer caller (scopes may have grown). */
  renewed?(caller: Caller): void;
  /** Whether the drain ends it now (a stream running a subscription); a socket lasts until the gateway closes (1001). */
  endsAtDrain?(): boolean;
}

/** Counts per key, a key removed at zero: as many entries as there are open live connections, at most. */
class Counter {
  private readonly counts = new Map<string, number>();
  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }
  add(key: string): void {
    this.counts.set(key, this.get(key) + 1);
  }
  remove(key: string): void {
    const left = this.get(key) - 1;
    if (left > 0) this.counts.set(key, left);
    else this.counts.delete(key);
  }
}

export interface LiveAuth {
  /** Why one more connection from `address` is refused (the cap reached), or undefined. */
  addressFull(address: string): string | undefined;
  /** Why one more connection of `caller` is refused (the cap reached), or undefined. */
  callerFull(caller: string): string | undefined;
  /** Counts a connection from `address`; returns its release (idempotent). */
  enterAddress(address: string): () => void;
  /** Counts `door` for its caller, ends it at its token's expiry or revocation; returns its release (idempotent). */
  enter(door: LiveDoor): () => void;
  /** The drain begins: ends every door that ends at the drain; how many it ended. */
  drain(): number;
  stop(): void;
}

/**
 * liveAuth, the registry (one per gateway): sockets and streams take the same path. On every reload of the tokens file or the JWKS each open door
 * is judged again (a JWT whose verdict is no longer kept is verified again, never taken for
 * revoked): a token gone, naming another caller or with fewer scopes ends its door.
 */
export function liveAuth(access: Access, logger: Logger, caps: LiveCaps): LiveAuth {
  const perAddress = new Counter();
  const perCaller = new Counter();
  const open = new Set<LiveDoor>();
  const rejudge = async (door: LiveDoor) => {
    let next: Caller | undefined;
    try {
      next = await access.callerNow(door.authorization);
    } catch {
      next = undefined;
    }
    if (!open.has(door)) return; // closed meanwhile
    if (next && !scopesShrank(door.caller, next)) {
      door.caller = next;
      door.renewed?.(next);
      return;
    }
    logger.info({ caller: door.caller.name, kind: door.kind }, `${door.kind} closed: its token was revoked or lost scopes`);
    open.delete(door);
    door.end('Forbidden: the token was revoked or lost scopes');
  };
  const stopReload = access.onReload(() => {
    for (const door of open) void rejudge(door);
  });
  return {
    addressFull: (address) =>
      perAddress.get(address) >= caps.socketsPerAddress
        ? `${caps.socketsPerAddress} sockets and streams are open from this address; at most ${caps.socketsPerAddress}`
        : undefined,
    callerFull: (caller) =>
      perCaller.get(caller) >= caps.socketsPerCaller
        ? `${caller} has ${caps.socketsPerCaller} sockets and streams open; at most ${caps.socketsPerCaller}`
        : undefined,
    enterAddress(address) {
      perAddress.add(address);
      let left = false;
      return () => {
        if (left) return;
        left = true;
        perAddress.remove(address);
      };
    },
    enter(door) {
      const name = door.caller.name;
      perCaller.add(name);
      open.add(door);
      const cancelExpiry = atExpiry(door.expiresAt, () => {
        if (!open.has(door)) return;
        logger.info({ caller: door.caller.name, kind: door.kind }, `${door.kind} closed: its token expired`);
        open.delete(door);
        door.end(`Forbidden: the token expired at ${new Date(door.expiresAt as number).toISOString()}`);
      });
      let left = false;
      return () => {
        if (left) return;
        left = true;
        cancelExpiry();
        open.delete(door);
        perCaller.remove(name);
      };
    },
    drain() {
      let ended = 0;
      for (const door of open) {
        if (!door.endsAtDrain?.()) continue;
        open.delete(door);
        door.end('the gateway is stopping');
        ended++;
      }
      return ended;
    },
    stop: stopReload,
  };
}

/** Calls `then` at `expiresAt` (epoch ms; never when undefined), however far off: returns its cancel. */
function atExpiry(expiresAt: number | undefined, then: () => void): () => void {
  if (expiresAt === undefined) return () => undefined;
  let timer: NodeJS.Timeout | undefined;
  const check = () => {
    const left = expiresAt - Date.now();
    // A Node timer waits at most MAX_TIMER_MS (24.8 days): a longer token is checked again then.
    if (left > 0) timer = setTimeout(check, Math.min(left, MAX_TIMER_MS)).unref();
    else then();
  };
  check();
  return () => clearTimeout(timer);
}

/** The media types a response streams in: Server-Sent Events, and Yoga's incremental delivery. */
const STREAM_TYPES = ['text/event-stream', 'multipart/mixed'];

/** Whether a request asks for a streamed answer (SSE or `multipart/mixed`): the requests the stream rules hold. */
export const asksForStream = (request: IncomingMessage): boolean => {
  const accept = request.headers.accept;
  return typeof accept === 'string' && STREAM_TYPES.some((type) => accept.includes(type));
};

/** HTTP streams on the live doors' rules: admitted under the caps, ended at expiry, revocation and (a subscription) at the drain. */
export interface LiveStreams {
  /** Holds a stream the caps guard let in to the doors' rules (counted, ended at expiry and revocation) until its response closes. */
  hold(request: IncomingMessage, response: ServerResponse, caller: Caller, address: string): void;
  /** Yoga's side: marks a request running a subscription, which the drain ends. */
  plugin: Plugin;
  /** Streams open now. */
  size(): number;
}

/**
 * SSE and `multipart/mixed` responses on the registry's rules, as graphql-ws sockets are: a
 * caller's or an address's streams count with its sockets against the same caps (refused 429,
 * `TOO_MANY_REQUESTS`), a stream is cut when its JWT expires or its token is revoked, and a
 * stream running a subscription is cut when the drain begins, so it holds the drain only while
 * it streams (an `EventSource` reconnects to another replica, resuming from its `id:`).
 */
export function liveStreams(doors: LiveAuth, access: Access): LiveStreams {
  const streams = new Map<ServerResponse, { subscription: boolean }>();
  const responses = new WeakMap<IncomingMessage, ServerResponse>();
  return {
    hold(request, response, caller, address) {
      const kind = (request.headers.accept ?? '').includes('text/event-stream') ? 'SSE stream' : 'multipart stream';
      const authorization = request.headers.authorization;
      const leaveAddress = doors.enterAddress(address);
      const leave = doors.enter({
        kind,
        caller,
        authorization,
        expiresAt: access.expiresAt(authorization),
        end: () => response.destroy(),
        // The drain ends a stream running a subscription: its EventSource resumes on another replica from its `id:`.
        endsAtDrain: () => streams.get(response)?.subscription === true,
      });
      streams.set(response, { subscription: false });
      responses.set(request, response);
      response.once('close', () => {
        streams.delete(response);
        leave();
        leaveAddress();
      });
    },
    plugin: {
      onSubscribe({ args }) {
        const request = (args.contextValue as { req?: IncomingMessage }).req;
        const response = request && responses.get(request);
        const stream = response && streams.get(response);
        if (stream) stream.subscription = true;
      },
    },
    size: () => streams.size,
  };
}

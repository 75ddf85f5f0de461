import { foreignHostMessage, isAllowedOrigin, isLoopbackHost, isReadableTarget } from '../browser-guards.js';
import { DRAIN_RETRY_AFTER_S } from '../ready.js';
import { atHttp, type Guard, JUDGED_AT_UPGRADE } from './guard.js';
import { refused } from './refusal.js';

/** The path of a target, without its query. */
const pathOf = (target: string | undefined): string => (target ?? '').split('?')[0] ?? '';

/** A balancer probes `/ready` (and `/health`) by address, and while the replica drains. */
const isProbe = (method: string | undefined, target: string | undefined): boolean => {
  const path = pathOf(target);
  return (path === '/ready' || path === '/health') && (method === 'GET' || method === 'HEAD');
};

/**
 * The target and Host must make a URL: Yoga builds `http://<Host><target>` and threw Invalid URL
 * (a 500 with its stack) on a Host such as `localhost:99999` or `[::1`, or an absolute-form target.
 */
export const targetGuard: Guard = {
  name: 'target',
  stage: 'arrival',
  at: atHttp({ connect: true, subscribe: JUDGED_AT_UPGRADE }),
  judge: ({ target, host }) =>
    target === undefined || isReadableTarget({ url: target, headers: { host } })
      ? undefined
      : refused('target', 400, 'BAD_REQUEST', 'the request target and Host header do not make a URL: send an origin-form target (/graphql) with a valid Host'),
};

/**
 * An open gateway listens on loopback; a page of a DNS name rebound to 127.0.0.1 reaches it with
 * its own name in Host, over HTTP and WebSocket alike. `/ready` answers any Host (a balancer).
 */
export const hostGuard: Guard = {
  name: 'host',
  stage: 'arrival',
  at: atHttp({ connect: true, subscribe: JUDGED_AT_UPGRADE }),
  judge: ({ host, target }, env) =>
    !env.loopbackOnly || pathOf(target) === '/ready' || isLoopbackHost(host) ? undefined : refused('host', 403, 'FORBIDDEN_HOST', foreignHostMessage(host)),
};

/** A draining replica takes nothing new: the client retries on another (its balancer reads `/ready`, which still answers). */
export const drainGuard: Guard = {
  name: 'drain',
  stage: 'arrival',
  at: atHttp({ connect: true, subscribe: 'a socket open when the drain begins is closed 1001 as the gateway stops' }),
  judge: ({ method, target }, env) =>
    !env.draining() || isProbe(method, target)
      ? undefined
      : refused('drain', 503, 'UNAVAILABLE', 'the gateway is stopping; try again', {
          headers: { 'retry-after': String(DRAIN_RETRY_AFTER_S), connection: 'close', 'cache-control': 'no-store' },
        }),
};

/** What CORS leaves to the browser, which reads no answer to a page its origin may not read. */
const CORS_JUDGES =
  'CORS judges a page of another origin (MESH_CORS_ORIGINS): its browser reads no answer, and CSRF prevention refuses what it sends unpreflighted';

/**
 * A browser opens a socket to any address from any page, with its Origin: only ours, a loopback
 * page on an open gateway and those listed in MESH_CORS_ORIGINS are let in, token or not.
 */
export const originGuard: Guard = {
  name: 'origin',
  stage: 'arrival',
  at: {
    POST: CORS_JUDGES,
    GET: CORS_JUDGES,
    'status fast path': CORS_JUDGES,
    multipart: CORS_JUDGES,
    SSE: CORS_JUDGES,
    'graphql-ws connect': true,
    'graphql-ws subscribe': JUDGED_AT_UPGRADE,
  },
  judge: ({ door, origin, host }, env) =>
    door !== 'graphql-ws connect' || isAllowedOrigin(origin, host, { open: env.access.open, listed: env.corsOrigins })
      ? undefined
      : refused('origin', 403, 'FORBIDDEN_ORIGIN', 'Forbidden: foreign Origin'),
};

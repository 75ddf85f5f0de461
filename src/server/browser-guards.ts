import type { IncomingMessage } from 'node:http';

/**
 * The header that marks a request as sent by a script that could set headers, which a cross-site
 * form or `text/plain` POST cannot: graphql-yoga's CSRF prevention header, kept by that name.
 */
export const CSRF_HEADER = 'x-graphql-yoga-csrf';

/**
 * Content types a browser sends cross-site without a CORS preflight (the "simple" ones); any
 * other content type was preflighted, so CORS already judged the page that sent it.
 */
const SIMPLE_CONTENT_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain'];

/** The names a loopback gateway answers to: anything else in `Host` is a rebound DNS name. */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** graphql-yoga's CSRF prevention rule (guards/request.ts): a content type a browser cannot send cross-site unpreflighted, or the CSRF header. */
export function passesCsrfPrevention(contentType: string | null | undefined, hasCsrfHeader: boolean): boolean {
  const type = contentType?.trim().toLowerCase();
  if (type && !SIMPLE_CONTENT_TYPES.some((simple) => type.startsWith(simple))) return true;
  return hasCsrfHeader;
}

/** Whether a `Host` header names this machine's loopback (`127.0.0.1`, `localhost`, `[::1]`), with any port. */
export function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const name = host.toLowerCase().replace(/:\d*$/, '');
  return LOOPBACK_HOSTS.has(name);
}

/** The message a request with a foreign `Host` gets from a loopback gateway. */
export const foreignHostMessage = (host: string | undefined) =>
  `this gateway has no MESH_TOKENS_FILE and answers loopback names only (127.0.0.1, localhost, [::1]); Host ${JSON.stringify(host ?? '')} is refused`;

/**
 * Whether a request's target and `Host` make a URL: an origin-form target (`/path?query`) under a
 * Host that parses. Yoga builds `http://<Host><target>` and threw Invalid URL (a 500 with its stack)
 * on a Host such as `localhost:99999` or `[::1`, or an absolute-form target (`http://evil/graphql`).
 */
export function isReadableTarget(request: Pick<IncomingMessage, 'url' | 'headers'>): boolean {
  const target = request.url ?? '';
  if (!target.startsWith('/')) return false;
  try {
    new URL(`http://${request.headers.host ?? 'localhost'}${target}`);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether a WebSocket upgrade's `Origin` may open a socket: none (not a browser), the gateway's own
 * (the origin's host is the request's `Host`), a loopback page on an open gateway (a developer's
 * tools), or one listed in MESH_CORS_ORIGINS. Anything else is a page of another site, which a
 * browser lets open a socket to any address: refused, token or not. Never throws: a `Host` or
 * `Origin` no URL parser takes is a refusal.
 */
export function isAllowedOrigin(origin: string | undefined, host: string | undefined, options: { open: boolean; listed: readonly string[] }): boolean {
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` (a sandboxed page, a file) and anything unreadable
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  if (host && url.host === hostOf(url.protocol, host)) return true;
  if (options.open && isLoopbackHost(url.host)) return true;
  return options.listed.includes(url.origin);
}

/** A `Host` header as a URL's host (its default port dropped), or undefined when it is none (`localhost:99999`, `[::1`). */
function hostOf(protocol: string, host: string): string | undefined {
  try {
    return new URL(`${protocol}//${host}`).host;
  } catch {
    return undefined;
  }
}

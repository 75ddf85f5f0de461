import { CSRF_HEADER, passesCsrfPrevention } from '../browser-guards.js';
import { REQUEST_BODY_LIMIT } from '../request-body-limit.js';
import { callerOrNothing } from './caller.js';
import { atHttp, type Guard } from './guard.js';
import { refused } from './refusal.js';

const DIGITS = /^\d+$/;

/** A socket's operation comes in a frame, bounded by the WebSocket server's maxPayload (closed 1009). */
const FRAMED = 'a frame is bounded by the WebSocket server (1 MiB, closed 1009)';

/**
 * A body's Content-Length must be digits and at most REQUEST_BODY_LIMIT (Yoga's own default
 * bound), judged before a byte of it is read; a body without one (chunked) is counted as it is
 * read (request-body-limit.ts).
 */
export const bodyGuard: Guard = {
  name: 'body',
  stage: 'request',
  at: { ...atHttp({ connect: FRAMED, subscribe: FRAMED }), GET: 'a GET has no body' },
  judge({ contentLength }) {
    if (contentLength == null) return undefined;
    if (!DIGITS.test(contentLength)) return refused('body', 400, 'BAD_REQUEST', 'Content-Length header is invalid.');
    if (Number(contentLength) > REQUEST_BODY_LIMIT) return refused('body', 413, 'REQUEST_ENTITY_TOO_LARGE', 'Request body too large');
    return undefined;
  },
};

/** An upgrade is not a form: the origin guard judges the page that opens a socket. */
const NOT_A_FORM = 'an upgrade is not a form: the origin guard judges the page that opens a socket';

/**
 * graphql-yoga's CSRF prevention (`@graphql-yoga/plugin-csrf-prevention`, the same rule): a
 * request without a content type, or with one a browser sends cross-site without a preflight,
 * must carry `x-graphql-yoga-csrf`; refused 403 before its body is parsed.
 */
export const csrfGuard: Guard = {
  name: 'csrf',
  stage: 'request',
  at: atHttp({ connect: NOT_A_FORM, subscribe: NOT_A_FORM }),
  judge: ({ door, contentType, csrfHeader }) =>
    door.startsWith('graphql-ws') || passesCsrfPrevention(contentType, csrfHeader === true)
      ? undefined
      : refused(
          'csrf',
          403,
          'CSRF_REFUSED',
          `a request without a JSON content type must carry the ${CSRF_HEADER} header (cross-site request forgery prevention)`,
        ),
};

/**
 * Operations per second per caller (MESH_OPS_PER_SECOND), counted before a body is parsed; over
 * it: 429 with `Retry-After`, or that operation's error on a socket. A request naming no caller is
 * the caller guard's. `dryRun` judges without spending.
 */
export const rateGuard: Guard = {
  name: 'rate',
  stage: 'request',
  at: atHttp({ connect: 'connection_init runs no operation: each operation is counted as it is subscribed', subscribe: true }),
  judge({ caller, authorization, dryRun }, { access, rate }) {
    const name = (caller ?? callerOrNothing(access, authorization))?.name;
    if (name === undefined) return undefined;
    const wait = dryRun ? (rate.wouldRefuse(name) ? 1 : 0) : rate.take(name);
    if (wait === 0) return undefined;
    return refused('rate', 429, 'TOO_MANY_REQUESTS', `${name} asks more than ${rate.perSecond} operations a second; retry after ${wait} s`, {
      headers: { 'Retry-After': String(wait) },
      extensions: { retryAfter: wait },
    });
  },
};

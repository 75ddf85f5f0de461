import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { regularMediaType, type StatusQueryCache } from '../fanout/status-query-cache.js';
import type { Access } from '../services/access/tokens.js';
import type { AccessLog } from './access-log.js';
import { callerOrNothing } from './guards/caller.js';
import type { RequestFacts } from './guards/guard.js';
import type { Guards } from './guards/index.js';
import type { OperationRate } from './rate-limit.js';

/**
 * A POST body longer than this is never read here: it goes to Yoga as it came. A `status` query
 * with every field is under 1 KiB; the bound keeps what this path buffers small.
 */
const STATUS_FAST_BODY_MAX = 64 * 1024;

const DIGITS = /^\d+$/;
/** The parameters a kept response answers: any other (extensions, documentId) goes to Yoga. */
const PARAMS = new Set(['query', 'operationName', 'variables']);

export interface StatusFastPathOptions {
  cache: StatusQueryCache;
  access: Access;
  rate: OperationRate;
  /** The gateway's guards: a request one refuses goes on to Yoga, which runs the same list and answers the refusal. */
  guards: Guards;
  log: AccessLog;
  /** The GraphQL endpoint's path (`/graphql`). */
  endpoint: string;
}

interface Params {
  query?: unknown;
  operationName?: unknown;
  variables?: unknown;
}

/** Whether a POST's content type is one Yoga reads as a JSON body, written as clients write it. */
const isJsonBody = (type: string | undefined): boolean => type === 'application/json' || type?.toLowerCase() === 'application/json; charset=utf-8';

/**
 * The status query answered before Yoga, from the bytes the status query cache keeps for the
 * current composition: the same answer Yoga's request parser gives it today (the cache's plugin),
 * without a fetch Request and Response, Yoga's hooks and its body stream per request. It runs the
 * guards' request and operation stages (src/server/guards/) as Yoga's path does; a request one
 * refuses, and anything else it does not answer, goes to `next` (Yoga) untouched, a body it read
 * included, and Yoga, running the same list, answers the refusal. It answers:
 * - POST to the endpoint with a JSON content type and a Content-Length up to STATUS_FAST_BODY_MAX,
 *   or GET with the query in the URL;
 * - no `Origin` header (so no CORS header would be added), an `Accept` Yoga's regular result
 *   processor answers;
 * - only `query`, `operationName` and `variables`, well formed, that every guard lets through;
 * - a kept response for this caller at the current composition;
 * - a caller within its rate, judged without spending before the body is read (one over it goes to
 *   Yoga unread, and is refused 429 before its body is parsed); spent as it is answered.
 * Anonymous callers, a foreign Host and a draining replica were refused before this, as before Yoga.
 * The access line names the operation, /metrics counts the request and the cache hit.
 */
export function statusFastPath(options: StatusFastPathOptions): (request: IncomingMessage, response: ServerResponse, next: RequestListener) => void {
  const { cache, access, rate, guards, log, endpoint } = options;
  const getPrefix = `${endpoint}?`;
  const headersBy = new Map<string, string>();

  /** Answers `params` from the cache and returns true, or returns false having written nothing. */
  const answer = (params: unknown, request: IncomingMessage, response: ServerResponse, mediaType: string, facts: RequestFacts): boolean => {
    if (!params || typeof params !== 'object' || Array.isArray(params)) return false;
    for (const name in params) if (!PARAMS.has(name)) return false;
    const { query, operationName, variables } = params as Params;
    if (typeof query !== 'string') return false;
    if (operationName != null && typeof operationName !== 'string') return false;
    if (variables != null && (typeof variables !== 'object' || Array.isArray(variables))) return false;
    if (guards.judge('operation', { ...facts, params: { query, operationName, variables } })) return false;
    const authorization = request.headers.authorization;
    const bytes = cache.kept(params as Params, authorization);
    if (!bytes) return false;
    const caller = callerOrNothing(access, authorization)?.name;
    if (caller === undefined || rate.take(caller) > 0) return false;
    cache.hit();
    log.operation(request, params as Params);
    let type = headersBy.get(mediaType);
    if (type === undefined) headersBy.set(mediaType, (type = `${mediaType}; charset=utf-8`));
    response.writeHead(200, { 'content-type': type, 'content-length': bytes.length });
    response.end(bytes);
    return true;
  };

  return (request, response, next) => {
    const { method, url, headers } = request;
    const mediaType = headers.origin === undefined ? regularMediaType(headers.accept) : undefined;
    if (!mediaType || !url || cache.keepsNone()) return next(request, response);
    const facts: RequestFacts = {
      door: 'status fast path',
      method,
      authorization: headers.authorization,
      contentType: headers['content-type'],
      contentLength: headers['content-length'],
      csrfHeader: headers['x-graphql-yoga-csrf'] !== undefined,
      dryRun: true,
    };
    // The request stage (the body's length, CSRF, the rate unspent), before the body is read.
    if (guards.judge('request', facts)) return next(request, response);
    if (method === 'GET' && url.startsWith(getPrefix)) {
      const params = fromSearch(new URLSearchParams(url.slice(getPrefix.length)));
      if (!params || !answer(params, request, response, mediaType, facts)) next(request, response);
      return;
    }
    if (method !== 'POST' || url !== endpoint || !isSmallJsonBody(headers)) return next(request, response);
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.once('end', () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      let params: unknown;
      try {
        params = JSON.parse(body.toString('utf8'));
      } catch {
        params = undefined;
      }
      try {
        if (params !== undefined && answer(params, request, response, mediaType, facts)) return;
      } catch {
        // A body this path cannot judge is Yoga's to answer (a refusal there), never a throw out of an event.
        if (response.headersSent) return void response.destroy();
      }
      // Yoga reads a body already taken from the stream from `request.body` (@whatwg-node/server).
      (request as IncomingMessage & { body?: Buffer }).body = body;
      next(request, response);
    });
  };
}

/** The parameters of a GET's search (`search`, after the `?`); undefined when this path does not take them. */
function fromSearch(search: URLSearchParams): Params | undefined {
  const params: Params = {};
  const seen = new Set<string>();
  for (const [name, value] of search) {
    if (!PARAMS.has(name) || seen.has(name)) return undefined; // a repeated parameter: Yoga takes the first, this path none
    seen.add(name);
    if (name === 'variables') {
      if (!value) continue;
      try {
        params.variables = JSON.parse(value);
      } catch {
        return undefined;
      }
    } else if (value) params[name as 'query' | 'operationName'] = value;
  }
  return params;
}

/** Whether a POST's body is one this path reads: JSON, with a Content-Length from 1 to STATUS_FAST_BODY_MAX, not chunked. */
function isSmallJsonBody(headers: IncomingMessage['headers']): boolean {
  const length = headers['content-length'];
  return (
    isJsonBody(headers['content-type']) &&
    headers['transfer-encoding'] === undefined &&
    length !== undefined &&
    DIGITS.test(length) &&
    Number(length) !== 0 &&
    Number(length) <= STATUS_FAST_BODY_MAX
  );
}

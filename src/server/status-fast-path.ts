import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { regularMediaType, type StatusQueryCache } from '../fanout/status-query-cache.js';
import type { Access } from '../services/access/tokens.js';
import type { AccessLog } from './access-log.js';
import { passesCsrfPrevention } from './browser-guards.js';
import { variablesRefusal } from './document-guard.js';
import type { PersistedOperations } from './persisted.js';
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
  persisted: PersistedOperations;
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
 * without a fetch Request and Response, Yoga's hooks and its body stream per request. It answers
 * only a request it judges exactly as Yoga's path would, and hands anything else to `next` (Yoga)
 * untouched, a body it read included:
 * - POST to the endpoint with a JSON content type and a Content-Length up to STATUS_FAST_BODY_MAX,
 *   or GET with the query in the URL that passes the CSRF prevention (as useCsrfPrevention);
 * - no `Origin` header (so no CORS header would be added), an `Accept` Yoga's regular result
 *   processor answers;
 * - only `query`, `operationName` and `variables`, well formed, the variables passing the params
 *   guard, the document in the manifest under MESH_PERSISTED_ONLY;
 * - a kept response for this caller at the current composition;
 * - a caller within its rate, judged before the body is read (one over it goes to Yoga unread, and is
 *   refused 429 before its body is parsed); the operation is taken from its bucket as it is answered.
 * Anonymous callers, a foreign Host and a draining replica were refused before this, as before Yoga.
 * The access line names the operation, /metrics counts the request and the cache hit.
 */
export function statusFastPath(options: StatusFastPathOptions): (request: IncomingMessage, response: ServerResponse, next: RequestListener) => void {
  const { cache, access, rate, persisted, log, endpoint } = options;
  const getPrefix = `${endpoint}?`;
  const headersBy = new Map<string, string>();

  /** Answers `params` from the cache and returns true, or returns false having written nothing. */
  const answer = (params: unknown, request: IncomingMessage, response: ServerResponse, mediaType: string): boolean => {
    if (!params || typeof params !== 'object' || Array.isArray(params)) return false;
    for (const name in params) if (!PARAMS.has(name)) return false;
    const { query, operationName, variables } = params as Params;
    if (typeof query !== 'string') return false;
    if (operationName != null && typeof operationName !== 'string') return false;
    if (variables != null && (typeof variables !== 'object' || Array.isArray(variables))) return false;
    if (variablesRefusal(variables)) return false;
    if (persisted.only) {
      try {
        if (persisted.documentFor({ query }) !== query) return false;
      } catch {
        return false;
      }
    }
    const authorization = request.headers.authorization;
    const bytes = cache.kept(params as Params, authorization);
    if (!bytes) return false;
    let caller: string;
    try {
      caller = access.callerFor(authorization).name;
    } catch {
      return false;
    }
    if (rate.take(caller) > 0) return false;
    cache.hit();
    log.operation(request, params as Params);
    let type = headersBy.get(mediaType);
    if (type === undefined) headersBy.set(mediaType, (type = `${mediaType}; charset=utf-8`));
    response.writeHead(200, { 'content-type': type, 'content-length': bytes.length });
    response.end(bytes);
    return true;
  };

  const fromUrl = (url: string): Params | undefined => {
    const search = new URLSearchParams(url.slice(getPrefix.length));
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
  };

  /** A caller over its rate is refused by Yoga before its body is read, as ever: this path leaves it alone. */
  const overRate = (authorization: string | undefined): boolean => {
    try {
      return rate.wouldRefuse(access.callerFor(authorization).name);
    } catch {
      return true;
    }
  };

  return (request, response, next) => {
    const { method, url, headers } = request;
    const mediaType = headers.origin === undefined ? regularMediaType(headers.accept) : undefined;
    if (!mediaType || !url || cache.keepsNone() || overRate(headers.authorization)) return next(request, response);
    if (method === 'GET' && url.startsWith(getPrefix)) {
      if (!passesCsrfPrevention(headers['content-type'], headers['x-graphql-yoga-csrf'] !== undefined)) return next(request, response);
      const params = fromUrl(url);
      if (!params || !answer(params, request, response, mediaType)) next(request, response);
      return;
    }
    const length = headers['content-length'];
    if (
      method !== 'POST' ||
      url !== endpoint ||
      !isJsonBody(headers['content-type']) ||
      headers['transfer-encoding'] !== undefined ||
      length === undefined ||
      !DIGITS.test(length) ||
      Number(length) === 0 ||
      Number(length) > STATUS_FAST_BODY_MAX
    )
      return next(request, response);
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
        if (params !== undefined && answer(params, request, response, mediaType)) return;
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

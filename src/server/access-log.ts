import { randomUUID } from 'node:crypto';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { Lexer, Source, TokenKind } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { Access } from '../services/access/tokens.js';
import { callerOrNothing } from './guards/caller.js';

/** A request id taken from the client is at most this long, of letters, digits and `-_.:`; anything else is replaced by one made here. */
export const REQUEST_ID_MAX = 128;
const REQUEST_ID = new RegExp(`^[A-Za-z0-9._:-]{1,${REQUEST_ID_MAX}}$`);
/** Probes are logged at debug: a balancer polling /ready every second would bury the requests people make. */
const PROBE_PATHS = new Set(['/ready', '/health', '/metrics']);

/** The request id of a request or WebSocket upgrade: its `x-request-id` when well formed, else a new UUID. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/** How much of a document is read for its operation's name: a log label, not worth more. */
const NAME_SCAN_MAX = 10_000;
/** Documents whose operation name is kept once read (the same few are asked again and again); emptied when full. */
export const OPERATION_NAMES_KEPT = 500;
/** …each at most this long (the names kept hold at most 500 × 4 KiB of text). */
const OPERATION_NAME_KEPT_UP_TO = 4_096;
const OPERATION_KEYWORDS = new Set(['query', 'mutation', 'subscription']);

/**
 * The operation's name as given, else the name of the document's first named operation, else
 * undefined (anonymous only, or not GraphQL). Read with graphql-js's lexer, linear in the text:
 * a regular expression here once cost quadratic time in newlines, before any authentication.
 */
export function operationNameOf(params: { operationName?: unknown; query?: unknown }): string | undefined {
  // Parameters are not judged yet here: anything may come, and the request's own refusal follows.
  if (typeof params.operationName === 'string' && params.operationName) return params.operationName.slice(0, 200);
  if (typeof params.query !== 'string') return undefined;
  const text = params.query.slice(0, NAME_SCAN_MAX);
  if (text.length > OPERATION_NAME_KEPT_UP_TO) return firstOperationName(text);
  const kept = namesRead.get(text);
  if (kept !== undefined || namesRead.has(text)) return kept;
  const name = firstOperationName(text);
  if (namesRead.size >= OPERATION_NAMES_KEPT) namesRead.clear();
  namesRead.set(text, name);
  return name;
}

/** Operation names read per short document (at most OPERATION_NAMES_KEPT): a dashboard's status query is lexed once, not at each request. */
const namesRead = new Map<string, string | undefined>();

function firstOperationName(text: string): string | undefined {
  try {
    const lexer = new Lexer(new Source(text));
    let depth = 0;
    // The first named operation at the top level, past fragments and anonymous operations.
    for (let token = lexer.advance(); token.kind !== TokenKind.EOF; token = lexer.advance()) {
      if (token.kind === TokenKind.BRACE_L) depth++;
      else if (token.kind === TokenKind.BRACE_R) depth--;
      else if (depth === 0 && token.kind === TokenKind.NAME && OPERATION_KEYWORDS.has(token.value)) {
        const name = lexer.advance();
        if (name.kind === TokenKind.NAME) return name.value;
      }
    }
    return undefined;
  } catch {
    // Not GraphQL (or cut mid-token at the scan's end): no name to log.
    return undefined;
  }
}

/** Who is asking, as a log names them: a token's name, `local` on an open gateway, or `refused`/`none`. */
function callerNameOf(access: Access, authorization: string | undefined): string {
  return callerOrNothing(access, authorization)?.name ?? (authorization ? 'refused' : 'none');
}

export interface AccessLog {
  /** Wraps the HTTP listener: the request id (echoed in `x-request-id`), then one line once the response ends. */
  http(next: RequestListener): RequestListener;
  /** Yoga plugin noting each request's operation name (first, so a cached answer has it too). */
  plugin: Plugin;
  /** Notes a request's operation name where a request is answered before Yoga (the status fast path). */
  operation(req: IncomingMessage, params: { operationName?: unknown; query?: unknown }): void;
  /** One line when a WebSocket closes: caller, operations, close code, how long it was open. */
  socket(
    req: IncomingMessage,
    requestId: string,
  ): { operation(params: { operationName?: string | null; query?: string }): void; caller(name: string): void; closed(code: number): void };
}

/**
 * The operator's log of who asked what: one `request` line per HTTP request (method, path,
 * operation, caller, status, duration, request id) and one `websocket` line per connection.
 * `onAnswered` counts each request for /metrics, answers from the status cache included.
 */
export function accessLog(logger: Logger, access: Access, onAnswered: (method: string, status: number, seconds: number) => void): AccessLog {
  const operations = new WeakMap<IncomingMessage, string>();
  return {
    http: (next) => (req: IncomingMessage, res: ServerResponse) => {
      const started = performance.now();
      const requestId = requestIdOf(req);
      // Read now: once the response ends, a socket cut mid-body (a 413) may be gone from the request.
      const address = req.socket?.remoteAddress;
      res.setHeader('x-request-id', requestId);
      let logged = false;
      const log = () => {
        if (logged) return;
        logged = true;
        const seconds = (performance.now() - started) / 1000;
        const method = req.method ?? 'GET';
        const path = (req.url ?? '').split('?')[0] ?? '';
        const status = res.headersSent ? res.statusCode : 0;
        onAnswered(method, status, seconds);
        const level = PROBE_PATHS.has(path) ? 'debug' : 'info';
        // Below the log's level the line is not even made (a kept status answer is a few tens of µs).
        if (!logger.isLevelEnabled(level)) return;
        const line = {
          method,
          path: path.slice(0, 200),
          operation: operations.get(req),
          caller: callerNameOf(access, req.headers.authorization),
          status,
          ms: Math.round(seconds * 10_000) / 10,
          requestId,
          address,
        };
        logger[level](line, 'request');
      };
      // A log line never takes the process down.
      const safeLog = () => {
        try {
          log();
        } catch (error) {
          logger.warn({ err: error }, 'access log line failed');
        }
      };
      res.once('finish', safeLog);
      res.once('close', safeLog);
      next(req, res);
    },
    operation(req, params) {
      const name = operationNameOf(params);
      if (name) operations.set(req, name);
    },
    plugin: {
      onParams({ params, context }) {
        const req = (context as { req?: IncomingMessage }).req;
        const name = operationNameOf(params);
        if (req && name) operations.set(req, name);
      },
    },
    socket: (req, requestId) => socketLine(logger, req, requestId),
  };
}

/** A socket's line in the making: its operations and caller as they come, written as it closes. */
function socketLine(logger: Logger, req: IncomingMessage, requestId: string): ReturnType<AccessLog['socket']> {
  const opened = performance.now();
  const address = req.socket?.remoteAddress;
  const names: string[] = [];
  let count = 0;
  let caller = 'none';
  return {
    operation(params) {
      count++;
      const name = operationNameOf(params);
      // Bounded: a socket may run thousands of operations in its life.
      if (name && names.length < 10 && !names.includes(name)) names.push(name.slice(0, 200));
    },
    caller(name) {
      caller = name;
    },
    closed(code) {
      logger.info(
        {
          method: 'WS',
          path: (req.url ?? '').split('?')[0],
          operations: count,
          operationNames: names,
          caller,
          status: code,
          ms: Math.round(performance.now() - opened),
          requestId,
          address,
        },
        'websocket',
      );
    },
  };
}

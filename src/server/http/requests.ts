import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { YogaServerInstance } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { GatewayContext } from '../../schema/support/context.js';
import type { Access } from '../../services/access/tokens.js';
import type { dashboardFiles } from '../dashboard.js';
import { callerOrNothing } from '../guards/caller.js';
import { httpDoorOf } from '../guards/guard.js';
import type { Guards } from '../guards/index.js';
import { answerRefusal } from '../guards/refusal.js';
import { noteEscaped } from '../last-resort.js';
import { asksForStream, type LiveStreams } from '../live-doors.js';
import type { Metrics } from '../metrics.js';
import type { Drain } from '../ready.js';

/** What an HTTP request meets on its way to Yoga. */
export interface RequestRoom {
  yoga: YogaServerInstance<Record<string, unknown>, GatewayContext>;
  access: Access;
  logger: Logger;
  guards: Guards;
  streams: LiveStreams;
  drain: Drain;
  metrics: Metrics;
  dashboard: ReturnType<typeof dashboardFiles>;
  /** The status fast path, which answers a kept status query or hands the request to Yoga. */
  fast?: (request: IncomingMessage, response: ServerResponse, next: RequestListener) => void;
}

/**
 * The HTTP door: a request meets the guards' arrival stage on its headers alone (target, Host,
 * drain), has its JWT verified, then `/metrics` and the dashboard are served; a request for Yoga
 * meets the caller stage (401 before any work), a stream the live stage (the caps) and liveAuth,
 * and goes to the status fast path or to Yoga, whose plugins run the request and operation stages.
 */
export function requestListener(room: RequestRoom): RequestListener {
  const { yoga, access, logger, guards, streams, drain, metrics, dashboard, fast } = room;
  /** Why a request's JWT was refused at its admission, for its 401. */
  const refusals = new WeakMap<IncomingMessage, string>();
  const toYoga = (request: IncomingMessage, response: ServerResponse) =>
    void Promise.resolve(yoga(request, response)).catch((error) => answerEscaped(request, response, error));
  /** A throw out of a guard or a rejection of Yoga's handler: counted and answered 500, never the process's end. */
  const answerEscaped = (_request: IncomingMessage, response: ServerResponse, error: unknown) => {
    noteEscaped(logger, 'request', error);
    if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' }).end('internal error\n');
    else response.destroy();
  };
  /** A request asking for a stream is held to the live doors' caps, then to liveAuth (expiry, revocation, the drain): true when refused. */
  const refuseStream = (request: IncomingMessage, response: ServerResponse): boolean => {
    if (!asksForStream(request)) return false;
    // None: a GraphiQL page or a preflight, which stream nothing; anything else was refused before.
    const caller = callerOrNothing(access, request.headers.authorization);
    if (!caller) return false;
    const address = request.socket.remoteAddress ?? 'unknown';
    const refusal = guards.judge('live', { door: httpDoorOf(request.method, request.headers.accept), address, caller });
    if (refusal) {
      logger.info({ caller: caller.name, address }, `stream refused: ${refusal.message}`);
      answerRefusal(request, response, refusal);
      return true;
    }
    streams.hold(request, response, caller, address);
    return false;
  };
  /** The caller stage: a request to the GraphQL endpoint without a known token is refused 401 before Yoga. */
  const refuseCaller = (request: IncomingMessage, response: ServerResponse): boolean => {
    const { method, headers } = request;
    const facts = { door: httpDoorOf(method, headers.accept), method, accept: headers.accept, authorization: headers.authorization };
    const refusal = guards.judge('caller', { ...facts, admission: refusals.get(request) });
    if (refusal) answerRefusal(request, response, refusal);
    return refusal !== undefined;
  };
  const answer = drain.handler((request, response) => {
    if (request.method === 'GET' && request.url?.split('?')[0] === '/metrics') return metrics.serve(request, response, access);
    if (dashboard.serve(request, response)) return;
    if (refuseCaller(request, response) || refuseStream(request, response)) return;
    if (fast) fast(request, response, toYoga);
    else toYoga(request, response);
  });
  /** The arrival stage, on the headers alone: the target, the Host, the drain. */
  const refuseArrival = (request: IncomingMessage, response: ServerResponse): boolean => {
    const { method, url: target, headers } = request;
    const refusal = guards.judge('arrival', { door: httpDoorOf(method, headers.accept), method, target, host: headers.host, origin: headers.origin });
    if (refusal) answerRefusal(request, response, refusal);
    return refusal !== undefined;
  };
  return (request, response) => {
    try {
      if (refuseArrival(request, response)) return;
      // A JWT's signature is verified (asynchronously) before anything judges the caller at once.
      const admitted = access.admit(request.headers.authorization);
      if (admitted)
        void admitted
          .then((refusal) => {
            // Kept with this request only: a refusal is kept nowhere else, and the caller guard names it.
            if (refusal !== undefined) refusals.set(request, refusal);
            answer(request, response);
          })
          .catch((error) => answerEscaped(request, response, error));
      else answer(request, response);
    } catch (error) {
      answerEscaped(request, response, error);
    }
  };
}

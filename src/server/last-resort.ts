import type { Server } from 'node:http';
import type { Logger } from 'pino';
import type { WebSocketServer } from 'ws';

/**
 * Where an error escaped every guard: thrown with nothing to catch it (`exception`), a promise
 * rejected with nobody waiting (`rejection`), an `error` event of the HTTP server, the WebSocket
 * server or a socket, or a throw out of the request listener (`request`, answered 500).
 */
const ESCAPE_PLACES = ['exception', 'rejection', 'http-server', 'ws-server', 'socket', 'request'] as const;
export type EscapePlace = (typeof ESCAPE_PLACES)[number];

/** Per process, as the process handlers are: every gateway of a test process shares them. */
const escaped = new Map<EscapePlace, number>(ESCAPE_PLACES.map((place) => [place, 0]));

/** What escaped so far, by place: `mesh_uncaught_total` on /metrics. */
export const escapedCounts = (): ReadonlyMap<EscapePlace, number> => escaped;

/** Logs and counts one error that reached the last resort; the process goes on serving. */
export function noteEscaped(logger: Logger, place: EscapePlace, error: unknown): void {
  escaped.set(place, (escaped.get(place) ?? 0) + 1);
  logger.error({ err: error, place }, 'an error escaped every guard (counted in mesh_uncaught_total); still serving');
}

/**
 * The process's last resort (src/main.ts installs it): an uncaught exception or an unhandled
 * rejection is logged and counted, never the end of the process. A request must never get here
 * (every guard refuses instead of throwing); the counter says whether one did. Returns its removal.
 */
export function installLastResort(logger: Logger): () => void {
  const onException = (error: unknown) => noteEscaped(logger, 'exception', error);
  const onRejection = (reason: unknown) => noteEscaped(logger, 'rejection', reason);
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return () => {
    process.off('uncaughtException', onException);
    process.off('unhandledRejection', onRejection);
  };
}

/**
 * `error` listeners where an emitter would otherwise throw: the WebSocket server (which re-emits
 * the HTTP server's errors while it is attached) and the HTTP server once it listens (a failure to
 * listen is start()'s to report). Each error is counted once. Each socket's own listener is
 * graphql-ws.ts's.
 */
export function listenForServerErrors(server: Server, wss: WebSocketServer, logger: Logger): void {
  const counted = new WeakSet<object>();
  wss.on('error', (error) => {
    counted.add(error);
    noteEscaped(logger, 'ws-server', error);
  });
  server.once('listening', () =>
    server.on('error', (error) => {
      if (!counted.has(error)) noteEscaped(logger, 'http-server', error);
    }),
  );
}

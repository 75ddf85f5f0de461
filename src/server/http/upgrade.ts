import type { IncomingMessage, Server } from 'node:http';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import type { Guards } from '../guards/index.js';
import { noteEscaped } from '../last-resort.js';

/** The most bytes one WebSocket message may have; a longer one closes its socket 1009. */
const WS_MAX_PAYLOAD = 1 << 20;

type Accept = (ok: boolean, status?: number, message?: string, headers?: Record<string, string>) => void;

/** The WebSocket server on `server`'s `/graphql`, every upgrade judged by verifyUpgrade. */
export function webSocketServer(server: Server, guards: Guards, logger: Logger): WebSocketServer {
  return new WebSocketServer({
    server,
    path: '/graphql',
    maxPayload: WS_MAX_PAYLOAD,
    // Every refusal is an HTTP status: a guard that throws here would end the process (ws calls it from the upgrade event).
    verifyClient: ({ req }, accept) => {
      try {
        verifyUpgrade(guards, logger, req, accept);
      } catch (error) {
        noteEscaped(logger, 'request', error);
        accept(false, 400, 'the upgrade could not be judged');
      }
    },
  });
}

/** The arrival stage at a WebSocket upgrade: the target, the Host, the drain and the Origin; a refusal is the upgrade's HTTP status. */
function verifyUpgrade(guards: Guards, logger: Logger, req: IncomingMessage, accept: Accept) {
  const { method, url: target, headers } = req;
  const refusal = guards.judge('arrival', { door: 'graphql-ws connect', method, target, host: headers.host, origin: headers.origin });
  if (!refusal) return accept(true);
  logger.info(
    { guard: refusal.guard, host: headers.host?.slice(0, 200), origin: headers.origin?.slice(0, 200) },
    `WebSocket upgrade refused: ${refusal.message}`,
  );
  accept(false, refusal.status, refusal.message, refusal.headers);
}

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Caller } from '../services/access/caller.js';
import { type Access, scopesShrank } from '../services/access/tokens.js';

/**
 * Ends the Server-Sent Events streams of revoked tokens: each SSE response is kept with the
 * Authorization it came with (one entry per open stream, removed when it closes), and when the
 * tokens file is re-read a stream whose token is gone, names another caller or lost a scope is
 * cut, as a graphql-ws socket is closed 4403. Nothing to do on an open gateway.
 */
export function closeRevokedStreams(access: Access, logger: Logger): { track(req: IncomingMessage, res: ServerResponse): void; stop(): void } {
  const streams = new Map<ServerResponse, { authorization: string | undefined; caller: Caller }>();
  const stop = access.onReload(() => {
    for (const [res, stream] of streams) {
      let next: Caller | undefined;
      try {
        next = access.callerFor(stream.authorization);
      } catch {
        next = undefined;
      }
      if (next && !scopesShrank(stream.caller, next)) {
        stream.caller = next;
        continue;
      }
      logger.info({ caller: stream.caller.name }, 'SSE stream closed: its token was revoked or lost scopes');
      streams.delete(res);
      res.destroy();
    }
  });
  return {
    track(req, res) {
      if (access.open || !(req.headers.accept ?? '').includes('text/event-stream')) return;
      const authorization = req.headers.authorization;
      let caller: Caller;
      try {
        caller = access.callerFor(authorization);
      } catch {
        return; // refused before it streams
      }
      streams.set(res, { authorization, caller });
      res.once('close', () => streams.delete(res));
    },
    stop,
  };
}

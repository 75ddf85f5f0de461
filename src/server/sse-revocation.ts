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
  // A JWT whose verdict is no longer kept is verified again (callerNow), never taken for revoked.
  const rejudge = async (res: ServerResponse, stream: { authorization: string | undefined; caller: Caller }) => {
    let next: Caller | undefined;
    try {
      next = await access.callerNow(stream.authorization);
    } catch {
      next = undefined;
    }
    if (!streams.has(res)) return; // ended meanwhile
    if (next && !scopesShrank(stream.caller, next)) {
      stream.caller = next;
      return;
    }
    logger.info({ caller: stream.caller.name }, 'SSE stream closed: its token was revoked or lost scopes');
    streams.delete(res);
    res.destroy();
  };
  const stop = access.onReload(() => {
    for (const [res, stream] of streams) void rejudge(res, stream);
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

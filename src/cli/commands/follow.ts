import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { Refused } from '../client.js';
import type { CommandContext } from '../context.js';

/**
 * Follows a subscription until Ctrl-C (exit 0), the gateway completes it, or `onNext` calls
 * `stop`. A reconnect, and a drop for falling behind (SLOW_SUBSCRIBER), subscribe again with
 * `variables()` asked afresh, so a follower that keeps its last cursor there misses nothing kept.
 */
export async function followLive<T, V extends Record<string, unknown>>(
  ctx: CommandContext,
  document: TypedDocumentNode<T, V>,
  onNext: (data: T, stop: () => void) => void,
  variables: () => V,
): Promise<void> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    while (!stop.signal.aborted) {
      try {
        await ctx.client.subscribe(document, (data) => onNext(data, () => stop.abort()), stop.signal, variables);
        return;
      } catch (error) {
        if (!(error instanceof Refused && error.code === 'SLOW_SUBSCRIBER')) throw error;
        process.stderr.write('fell behind the gateway: resuming from the last one shown\n');
      }
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

import { GraphQLError } from 'graphql';
import type { LiveQueue } from '../../kernel/live-queue.js';
import { LIVE_WAITING_MAX } from '../../kernel/live-queue.js';
import type { GatewayContext } from './context.js';
import { markSeq } from './live.js';

/** What a dropped follower is sent last, in place of an item: where to resume from. */
export class Dropped {
  constructor(readonly resumeAfter: string | undefined) {}
}

/**
 * A follow as a subscription's source: each item, its cursor marked for the SSE `id:`; a follower
 * dropped for falling LIVE_WAITING_MAX behind gets `Dropped` (the field's resolve turns it into the
 * error SLOW_SUBSCRIBER naming the cursor to resume after), then the subscription completes.
 */
export function followed<T>(
  queue: LiveQueue<T>,
  ctx: GatewayContext,
  cursorOf: (item: T) => string | undefined,
  start?: string,
): AsyncIterableIterator<T | Dropped> {
  let last = start;
  return {
    async next() {
      const step = await queue.next();
      if (step.done) return { value: undefined, done: true };
      if (step.value.kind === 'dropped') return { value: new Dropped(last), done: false };
      const cursor = cursorOf(step.value.item);
      if (cursor !== undefined) {
        last = cursor;
        markSeq(ctx, cursor);
      }
      return { value: step.value.item, done: false };
    },
    return: () => queue.return() as Promise<IteratorResult<T | Dropped>>,
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/** A followed item as the field's value; a Dropped as the SLOW_SUBSCRIBER error. */
export function followedItem<T>(value: T | Dropped): T {
  if (!(value instanceof Dropped)) return value;
  const resume = value.resumeAfter === undefined ? 'subscribe again' : `subscribe again with after: ${JSON.stringify(value.resumeAfter)}`;
  throw new GraphQLError(`this subscriber fell ${LIVE_WAITING_MAX} changes behind and was dropped: ${resume}`, {
    extensions: { code: 'SLOW_SUBSCRIBER', resumeAfter: value.resumeAfter ?? null },
  });
}

/** Where a follower resumes: `after` when given, else the SSE `Last-Event-ID` header an EventSource sends on reconnecting. */
export function resumeCursor(ctx: GatewayContext, after: string | null | undefined): string | undefined {
  if (after !== null && after !== undefined) return after;
  const header = (ctx as unknown as { request?: Request }).request?.headers.get('last-event-id')?.trim();
  return header ? header.slice(0, 100) : undefined;
}

import { GraphQLError } from 'graphql';
import type { LiveQueue } from '../../kernel/live-queue.js';
import { LIVE_WAITING_MAX } from '../../kernel/live-queue.js';
import type { GatewayContext } from './context.js';
import { mapLive, markSeq } from './live.js';

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
  return mapLive(queue, (step) => {
    if (step.kind === 'dropped') return new Dropped(last);
    const cursor = cursorOf(step.item);
    if (cursor !== undefined) {
      last = cursor;
      markSeq(ctx, cursor);
    }
    return step.item;
  });
}

/** A followed item as the field's value; a Dropped as the SLOW_SUBSCRIBER error. */
export function followedItem<T>(value: T | Dropped): T {
  if (!(value instanceof Dropped)) return value;
  const resume = value.resumeAfter === undefined ? 'subscribe again' : `subscribe again with after: ${JSON.stringify(value.resumeAfter)}`;
  throw new GraphQLError(`this subscriber fell ${LIVE_WAITING_MAX} changes behind and was dropped: ${resume}`, {
    extensions: { code: 'SLOW_SUBSCRIBER', resumeAfter: value.resumeAfter ?? null },
  });
}

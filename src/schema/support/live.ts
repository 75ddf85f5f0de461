import type { GatewayContext } from './context.js';

/**
 * Where a live subscription leaves the seq (or cursor) of the message it is about to send, on its
 * own context, so the SSE transport can write it as the event's `id:` (src/fanout/sse-ids.ts).
 */
export const LIVE_SEQ = Symbol('the seq of the live status message being sent');

export const markSeq = (ctx: GatewayContext, seq: number | string): void => {
  (ctx as unknown as Record<symbol, number | string>)[LIVE_SEQ] = seq;
};

/** A composition's seq as an SSE id: digits only, short enough to be a safe integer. */
const SEQ_ID = /^\d{1,15}$/;
/** A follow's cursor (a hand-act id, a call's revision) read from an SSE id is cut to this many characters. */
const CURSOR_ID_MAX = 100;

/**
 * Where a subscriber resumes: `after` when given, else the SSE `Last-Event-ID` header a browser's
 * EventSource sends on reconnecting (the `id:` of the last event it got), read by `fromId`.
 * Undefined: no such header, or one `fromId` does not take.
 */
function resumePoint<T>(ctx: GatewayContext, after: T | null | undefined, fromId: (id: string) => T | undefined): T | undefined {
  if (after !== null && after !== undefined) return after;
  const header = (ctx as unknown as { request?: Request }).request?.headers.get('last-event-id')?.trim();
  return header ? fromId(header) : undefined;
}

/** The composition a status subscriber resumes after: `after`, or the seq of its last SSE event. */
export const resumeSeq = (ctx: GatewayContext, after: number | null | undefined): number | undefined =>
  resumePoint(ctx, after, (id) => (SEQ_ID.test(id) ? Number(id) : undefined));

/** The cursor a follower resumes after: `after`, or the id of its last SSE event. */
export const resumeCursor = (ctx: GatewayContext, after: string | null | undefined): string | undefined =>
  resumePoint(ctx, after, (id) => id.slice(0, CURSOR_ID_MAX));

/**
 * A live source as a subscription's: each value given to `each` as the reader pulls it, never
 * ahead (so what `each` marks on the context, the SSE `id:`, is the message being sent), and the
 * reader's `return` passed on, so the source stops following.
 */
export function mapLive<T, U>(source: AsyncIterator<T>, each: (value: T) => U): AsyncIterableIterator<U> {
  return {
    async next() {
      const step = await source.next();
      return step.done ? { done: true, value: undefined } : { done: false, value: each(step.value) };
    },
    async return() {
      await source.return?.();
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

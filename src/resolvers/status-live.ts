import { Invalid } from '../kernel/errors.js';
import type { GatewayContext } from '../schema/context.js';
import { EVERY_MS_MAX } from '../services/status/live/subscription.js';

/**
 * Where a live status subscription leaves the seq of the message it is about to send, on its own
 * context, so the SSE transport can write it as the event's `id:` (src/fanout/sse-ids.ts).
 */
export const LIVE_SEQ = Symbol('the seq of the live status message being sent');

export const markSeq = (ctx: GatewayContext, seq: number | string): void => {
  (ctx as unknown as Record<symbol, number | string>)[LIVE_SEQ] = seq;
};

/** `everyMs` as given: absent or 0 means every composition; negative or over EVERY_MS_MAX is refused. */
export function judgeEveryMs(everyMs: number | null | undefined): number {
  if (everyMs === null || everyMs === undefined) return 0;
  if (everyMs < 0 || everyMs > EVERY_MS_MAX) throw new Invalid(`everyMs must be between 0 and ${EVERY_MS_MAX}, got ${everyMs}`, 'everyMs');
  return everyMs;
}

/**
 * Where a subscriber resumes: `after` when given, else the SSE `Last-Event-ID` header a browser's
 * EventSource sends on reconnecting (the `id:` of the last event it got). Undefined: from the start.
 */
export function resumeFrom(ctx: GatewayContext, after: number | null | undefined): number | undefined {
  if (after !== null && after !== undefined) return after;
  const header = (ctx as unknown as { request?: Request }).request?.headers.get('last-event-id');
  if (!header || !/^\d{1,15}$/.test(header.trim())) return undefined;
  return Number(header.trim());
}

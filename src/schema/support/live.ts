import type { GatewayContext } from './context.js';

/**
 * Where a live status subscription leaves the seq of the message it is about to send, on its own
 * context, so the SSE transport can write it as the event's `id:` (src/fanout/sse-ids.ts).
 */
export const LIVE_SEQ = Symbol('the seq of the live status message being sent');

export const markSeq = (ctx: GatewayContext, seq: number | string): void => {
  (ctx as unknown as Record<symbol, number | string>)[LIVE_SEQ] = seq;
};

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

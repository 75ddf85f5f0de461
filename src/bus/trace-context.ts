import { headers, Match, type MsgHdrs } from '@nats-io/transport-node';
import {
  type Context,
  context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  trace,
} from '@opentelemetry/api';

/**
 * W3C trace context on NATS messages, through `@opentelemetry/api` only: without an SDK registered
 * (no OTEL_* endpoint, src/server/tracing.ts) every call here is a no-op and nothing is added to
 * a message. With one, a `traceparent` header carries the trace agent → gateway → holder.
 */
const tracer = trace.getTracer('mesh-gateway');

/** Reads NATS headers, whatever the case of the name an agent wrote (`traceparent`, `Traceparent`). */
const natsGetter: TextMapGetter<MsgHdrs | undefined> = {
  get: (carrier, key) => (carrier?.has(key, Match.IgnoreCase) ? carrier.get(key, Match.IgnoreCase) : undefined),
  keys: (carrier) => (carrier ? [...carrier.keys()] : []),
};

/** `h` (new headers when absent) with the active span's `traceparent` (and `tracestate`) added, if any. */
export function traceHeaders(h: MsgHdrs = headers()): MsgHdrs {
  propagation.inject(context.active(), h, { set: (carrier, key, value) => carrier.set(key, value) });
  return h;
}

/** The trace context a NATS message's `traceparent` names; the root context (a new trace) when it names none. */
export function messageContext(h: MsgHdrs | undefined): Context {
  return propagation.extract(ROOT_CONTEXT, h, natsGetter);
}

/** A link to the trace a message's `traceparent` names, or undefined. */
function messageLink(h: MsgHdrs | undefined): Link | undefined {
  const spanContext = trace.getSpanContext(messageContext(h));
  return spanContext && trace.isSpanContextValid(spanContext) ? { context: spanContext } : undefined;
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Record<string, string | number | boolean | undefined>;
  links?: Link[];
  /** The parent: the active context unless given (a message's, from messageContext). */
  parent?: Context;
}

/** Marks a span ERROR with what was thrown. */
function failSpan(span: Span, error: unknown): void {
  span.recordException(error as Error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.message });
}

/**
 * Runs `work` in a new span, active while it runs, so the statements and messages it makes are its
 * children. A throw (or a rejection, when `work` returns a promise) marks the span ERROR and is
 * passed on; the span ends when the work does, at once for synchronous work (a publish, a fan-out
 * delivery) and when the promise settles for asynchronous work.
 */
function spanAround<T>(name: string, options: SpanOptions, work: (span: Span) => T): T {
  const parent = options.parent ?? context.active();
  const span = tracer.startSpan(name, { kind: options.kind, attributes: options.attributes, links: options.links }, parent);
  let result: T;
  try {
    result = context.with(trace.setSpan(parent, span), () => work(span));
  } catch (error) {
    failSpan(span, error);
    span.end();
    throw error;
  }
  if (!(result instanceof Promise)) {
    span.end();
    return result;
  }
  return result.then(
    (value) => (span.end(), value),
    (error) => {
      failSpan(span, error);
      span.end();
      throw error;
    },
  ) as T;
}

/** Runs asynchronous `work` in a new span (spanAround). */
export const inSpan = <T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>): Promise<T> => spanAround(name, options, work);

/** Runs synchronous `work` in a new span (spanAround). */
export const inSpanSync = <T>(name: string, options: SpanOptions, work: (span: Span) => T): T => spanAround(name, options, work);

export { ROOT_CONTEXT, SpanKind };

/** The attributes of a span around a NATS request or publish (OpenTelemetry's messaging conventions). */
export function natsSpanAttributes(subject: string, callId?: string): Record<string, string | undefined> {
  return { 'messaging.system': 'nats', 'messaging.destination.name': subject, 'mesh.call.id': callId };
}

/** Links a batch's span keeps, at most: OpenTelemetry's default link limit per span. */
const BATCH_LINKS_MAX = 128;

/**
 * Runs the writing of a batch of messages (news) in a span of its own, linked to the traces the
 * messages' `traceparent`s name (the first BATCH_LINKS_MAX of them): a batch has many parents.
 */
export function inBatchSpan<T>(name: string, messages: readonly { headers?: MsgHdrs }[], work: () => Promise<T>): Promise<T> {
  const links: Link[] = [];
  for (const msg of messages) {
    if (links.length >= BATCH_LINKS_MAX) break;
    const link = messageLink(msg.headers);
    if (link) links.push(link);
  }
  return inSpan(name, { kind: SpanKind.CONSUMER, links, parent: ROOT_CONTEXT, attributes: { 'messaging.batch.message_count': messages.length } }, work);
}

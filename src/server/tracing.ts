import type { IncomingMessage } from 'node:http';
import { context, propagation, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type TextMapGetter, trace } from '@opentelemetry/api';
import { OTLPTraceExporter as OTLPJsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { type DocumentNode, type ExecutionResult, getOperationAST } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import { ConfigError } from '../config.js';

/** The service name spans carry when OTEL_SERVICE_NAME is not set. */
const DEFAULT_SERVICE_NAME = 'mesh-gateway';
/** The OTLP encodings over HTTP this gateway sends (OTEL_EXPORTER_OTLP_PROTOCOL); gRPC is not among them. */
const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;

/** Whether this process registered the SDK: without it the operation plugin does nothing at all. */
let tracingOn = false;

export interface Tracing {
  /** Sends the spans still held, then stops. */
  stop(): Promise<void>;
}

/**
 * Starts OpenTelemetry tracing when the environment asks for it: OTEL_EXPORTER_OTLP_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set, OTEL_SDK_DISABLED not `true`, OTEL_TRACES_EXPORTER not
 * `none`. Undefined (tracing off, every span a no-op) otherwise. The SDK reads the standard
 * variables itself (endpoint, headers, timeout, OTEL_TRACES_SAMPLER and its _ARG, OTEL_BSP_*,
 * OTEL_RESOURCE_ATTRIBUTES), which is why they are not in src/config.ts. An unknown protocol is
 * a ConfigError. docs/operations.md, "Traces".
 */
export function startTracing(env: NodeJS.ProcessEnv, logger: Logger): Tracing | undefined {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint || env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return undefined;
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf';
  if (!(OTLP_PROTOCOLS as readonly string[]).includes(protocol)) {
    throw new ConfigError(`OTEL_EXPORTER_OTLP_PROTOCOL must be one of ${OTLP_PROTOCOLS.join(', ')}, got ${JSON.stringify(protocol)}`);
  }
  const exporter = protocol === 'http/json' ? new OTLPJsonTraceExporter() : new OTLPProtoTraceExporter();
  const resource = resourceFromAttributes({ 'service.name': DEFAULT_SERVICE_NAME }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  // The W3C trace-context propagator and the async-hooks context manager: spans follow awaits.
  provider.register();
  tracingOn = true;
  logger.info(
    { endpoint, protocol, service: resource.attributes['service.name'], sampler: env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on' },
    'tracing on (OpenTelemetry)',
  );
  return {
    async stop() {
      tracingOn = false;
      await provider.shutdown().catch((err) => logger.warn({ err: String(err) }, 'the last spans could not be sent'));
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/** Reads a traceparent from a Fetch request's headers, a WebSocket upgrade's, or an operation's `extensions`. */
const recordGetter: TextMapGetter<Record<string, unknown>> = {
  get: (carrier, key) => {
    const value = carrier[key];
    return typeof value === 'string' ? value : undefined;
  },
  keys: (carrier) => Object.keys(carrier),
};

interface OperationContext {
  request?: Request;
  req?: IncomingMessage;
  params?: { operationName?: string | null; extensions?: Record<string, unknown> | null };
}

/**
 * The trace an operation belongs to: the `traceparent` in its `extensions` (how a graphql-ws client
 * names one per operation), else its HTTP request's header (or the WebSocket upgrade's), else a new one.
 */
function operationParent(ctx: OperationContext): ReturnType<typeof propagation.extract> {
  const extensions = ctx.params?.extensions;
  if (extensions && typeof extensions.traceparent === 'string') return propagation.extract(ROOT_CONTEXT, extensions, recordGetter);
  if (ctx.request) {
    const carrier = { traceparent: ctx.request.headers.get('traceparent') ?? undefined, tracestate: ctx.request.headers.get('tracestate') ?? undefined };
    return propagation.extract(ROOT_CONTEXT, carrier, recordGetter);
  }
  if (ctx.req) return propagation.extract(ROOT_CONTEXT, ctx.req.headers, recordGetter);
  return ROOT_CONTEXT;
}

const spanName = (document: DocumentNode, operationName?: string | null) => {
  const operation = getOperationAST(document, operationName);
  const name = operationName || operation?.name?.value;
  return { type: operation?.operation ?? 'query', name, title: name ? `${operation?.operation ?? 'query'} ${name}` : (operation?.operation ?? 'query') };
};

/**
 * A span per GraphQL operation (`query SeatNames`), over HTTP, SSE and graphql-ws alike, in the
 * trace its caller names (see operationParent), active while it runs: the statements it makes and
 * the NATS requests it sends (callVerb, a push's applies) are its children. A subscription's span
 * covers starting it. With tracing off, the spans are no-ops.
 */
export function useOperationTracing(): Plugin {
  const tracer = trace.getTracer('mesh-gateway');
  const run = (ctx: OperationContext, wrapped: () => unknown) => {
    if (!tracingOn) return wrapped();
    const parent = operationParent(ctx);
    const span = tracer.startSpan('graphql operation', { kind: SpanKind.SERVER }, parent);
    const end = () => span.end();
    let result: unknown;
    try {
      result = context.with(trace.setSpan(parent, span), wrapped);
    } catch (error) {
      failed(span, error);
      end();
      throw error;
    }
    if (result instanceof Promise) return result.then(end, (error) => (failed(span, error), end(), Promise.reject(error)));
    end();
    return result;
  };
  const describe = (document: DocumentNode, operationName?: string | null) => {
    const span = trace.getActiveSpan();
    if (!span?.isRecording()) return undefined;
    const { type, name, title } = spanName(document, operationName);
    span.updateName(title);
    span.setAttributes({ 'graphql.operation.type': type, ...(name ? { 'graphql.operation.name': name.slice(0, 200) } : {}) });
    return span;
  };
  const errorsOf = (span: Span | undefined, result: unknown) => {
    if (!span || isAsyncIterable(result)) return;
    const errors = (result as ExecutionResult).errors;
    if (errors?.length) span.setStatus({ code: SpanStatusCode.ERROR, message: errors[0]?.message });
  };
  return {
    instrumentation: {
      execute: ({ context: ctx }, wrapped) => run(ctx as OperationContext, wrapped) as ReturnType<typeof wrapped>,
      subscribe: ({ context: ctx }, wrapped) => run(ctx as OperationContext, wrapped) as ReturnType<typeof wrapped>,
    },
    onExecute({ args }) {
      const span = describe(args.document, args.operationName);
      return { onExecuteDone: ({ result }) => errorsOf(span, result) };
    },
    onSubscribe({ args }) {
      const span = describe(args.document, args.operationName);
      return { onSubscribeResult: ({ result }) => errorsOf(span, result) };
    },
  };
}

function failed(span: Span, error: unknown): void {
  span.recordException(error as Error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.message });
}

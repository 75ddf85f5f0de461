import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, expect, onTestFinished, test } from 'vitest';
import { WebSocket } from 'ws';
import { type ChildGateway, spawnGateway } from '../fixtures/child.js';
import { eventually, wsSubscribe } from '../fixtures/live.js';
import { type TestEnv, testEnv } from '../fixtures/services.js';

/** An OTLP/HTTP receiver as a collector runs one: every POST to /v1/traces kept, answered 200. */
interface Receiver {
  url: string;
  posts: { contentType: string; body: Buffer }[];
  close(): Promise<void>;
}
async function anOtlpReceiver(): Promise<Receiver> {
  const posts: Receiver['posts'] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') posts.push({ contentType: String(req.headers['content-type']), body: Buffer.concat(chunks) });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    posts,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  links?: { traceId: string; spanId: string }[];
  attributes?: { key: string; value: { stringValue?: string } }[];
}
/** Every span of every http/json export, with its service name. */
function spansOf(receiver: Receiver): (OtlpSpan & { service: string })[] {
  const spans: (OtlpSpan & { service: string })[] = [];
  for (const post of receiver.posts) {
    if (!post.contentType.includes('json')) continue;
    for (const rs of JSON.parse(post.body.toString()).resourceSpans ?? []) {
      const service = rs.resource?.attributes?.find((a: { key: string }) => a.key === 'service.name')?.value?.stringValue;
      for (const ss of rs.scopeSpans ?? []) for (const span of ss.spans ?? []) spans.push({ ...span, service });
    }
  }
  return spans;
}

/** A W3C traceparent an agent would send: a new trace, its own span, sampled. */
function aTraceparent(): { traceId: string; spanId: string; header: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, header: `00-${traceId}-${spanId}-01` };
}

let env: TestEnv;
let receiver: Receiver;
let gateway: ChildGateway;
let holder: NatsConnection;
/** The traceparent each request to the queue seat's holder carried. */
const heldTraceparents: string[] = [];
const appliedTraceparents: string[] = [];

beforeAll(async () => {
  env = await testEnv('tracing');
  receiver = await anOtlpReceiver();
  holder = await connect({ servers: env.env.NATS_URL });
  // The queue seat's holder: answers every call, noting the traceparent it was sent with.
  holder.subscribe(`${env.subjects}.seat.queue.*`, {
    callback: (_err, msg) => {
      heldTraceparents.push(msg.headers?.get('traceparent') ?? '');
      msg.respond(JSON.stringify({ ok: true, answer: { depth: 3 } }));
    },
  });
  holder.subscribe(`${env.subjects}.plan.*.apply`, { callback: (_err, msg) => void appliedTraceparents.push(msg.headers?.get('traceparent') ?? '') });
  await holder.flush();
  gateway = await spawnGateway({
    ...env.env,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: '',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
}, 90_000);
afterAll(async () => {
  await gateway?.stop();
  await holder?.close();
  await receiver?.close();
  await env?.cleanup();
});

const postGraphql = async (query: string, traceparent: string) => {
  const response = await fetch(gateway.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', traceparent },
    body: JSON.stringify({ query }),
  });
  return (await response.json()) as { data?: any; errors?: unknown[] };
};
const spansOfTrace = (traceId: string) => spansOf(receiver).filter((s) => s.traceId === traceId);

test('a callVerb over HTTP with a traceparent is one trace: the GraphQL operation, its statements, the NATS request, and the holder hears the same trace', async () => {
  const agent = aTraceparent();
  const answer = await postGraphql(
    'mutation AskDepth { callVerb(seat: "queue", verb: "depth", args: {queue: "orders"}) { __typename ... on MutationCallVerbSuccess { data { state } } } }',
    agent.header,
  );
  expect(answer.data?.callVerb).toEqual({ __typename: 'MutationCallVerbSuccess', data: { state: 'OK' } });

  // The holder was sent the trace, under the gateway's span for the request it sent.
  const sent = heldTraceparents.at(-1)!;
  expect(sent).toMatch(new RegExp(`^00-${agent.traceId}-[0-9a-f]{16}-01$`));

  const spans = await eventually(
    () => {
      const found = spansOfTrace(agent.traceId);
      return found.some((s) => s.name === 'mutation AskDepth') && found.some((s) => s.name === 'callVerb queue.depth') ? found : undefined;
    },
    'the trace exported to the collector',
    20_000,
    100,
  );
  const operation = spans.find((s) => s.name === 'mutation AskDepth')!;
  expect(operation.service).toBe('mesh-gateway');
  expect(operation.parentSpanId).toBe(agent.spanId);
  const request = spans.find((s) => s.name === 'callVerb queue.depth')!;
  expect(request.parentSpanId).toBe(operation.spanId);
  expect(sent.split('-')[2]).toBe(request.spanId);
  // The store's statements (reading the seat, writing the call) are in the trace too.
  expect(spans.filter((s) => ['select', 'insert', 'update'].includes(s.name)).length).toBeGreaterThan(0);
});

test('a verb call over NATS with a traceparent header is handled in that trace', async () => {
  const agent = aTraceparent();
  const h = headers();
  h.set('traceparent', agent.header);
  const answer = await holder.request(`${env.subjects}.seat.${env.controller}.calls.tracer`, JSON.stringify({}), { timeout: 10_000, headers: h });
  expect(answer.json<{ ok: boolean }>().ok).toBe(true);
  const spans = await eventually(
    () => {
      const found = spansOfTrace(agent.traceId);
      return found.some((s) => s.name === 'controller calls') ? found : undefined;
    },
    'the NATS verb call exported',
    20_000,
    100,
  );
  expect(spans.find((s) => s.name === 'controller calls')!.parentSpanId).toBe(agent.spanId);
});

test("news carrying a traceparent is written in a 'news batch' span linked to the agent's trace; the composition and its fan-out delivery follow", async () => {
  const live = wsSubscribe(gateway.url, 'subscription { status { seq } }');
  onTestFinished(() => live.close());
  await live.atLeast(1, 20_000);
  const agent = aTraceparent();
  const h = headers();
  h.set('traceparent', agent.header);
  holder.publish(`${env.subjects}.news.machine.traced-m1`, JSON.stringify({ kind: 'heartbeat', site: 'eu-1', modules: ['web'] }), { headers: h });
  await holder.flush();
  const batch = await eventually(
    () => spansOf(receiver).find((s) => s.name === 'news batch' && s.links?.some((l) => l.traceId === agent.traceId && l.spanId === agent.spanId)),
    'the news batch span linked to the trace',
    20_000,
    100,
  );
  // The statements writing the news are the batch's children.
  await eventually(
    () => spansOf(receiver).some((s) => s.traceId === batch.traceId && s.parentSpanId === batch.spanId),
    'a statement under the batch',
    20_000,
    100,
  );
  // And the composition that follows is a span of its own.
  await eventually(() => spansOf(receiver).some((s) => s.name === 'composition'), 'a composition span', 20_000, 100);
  await live.atLeast(2, 20_000);
  await eventually(() => spansOf(receiver).some((s) => s.name === 'fanout delivery'), 'a fan-out delivery span', 20_000, 100);
});

test('an operation over graphql-ws takes the traceparent from its extensions; a push passes it on to the plan apply', async () => {
  const client = createClient({ url: gateway.url.replace(/^http/, 'ws'), webSocketImpl: WebSocket, retryAttempts: 0 });
  const agent = aTraceparent();
  try {
    const result = await new Promise<unknown>((resolve, reject) => {
      let data: unknown;
      client.subscribe(
        { query: 'query WsSeats { seats { name } }', extensions: { traceparent: agent.header } },
        { next: (r) => (data = r.data), error: reject, complete: () => resolve(data) },
      );
    });
    expect(result).toMatchObject({ seats: expect.any(Array) });
  } finally {
    await client.dispose();
  }
  const ws = await eventually(() => spansOfTrace(agent.traceId).find((s) => s.name === 'query WsSeats'), 'the WebSocket operation exported', 20_000, 100);
  expect(ws.parentSpanId).toBe(agent.spanId);

  // A seat held by a machine, then a push: its apply is published with the push's trace.
  const seat = `traced-${randomBytes(3).toString('hex')}`;
  const defined = await gateway.gql(`mutation { defineSeat(input: { name: "${seat}", replicated: true }) { __typename } }`);
  expect(defined.errors).toBeUndefined();
  holder.publish(`${env.subjects}.news.machine.traced-m2`, JSON.stringify({ kind: 'heartbeat', site: 'eu-1', modules: ['web'], claims: { web: [seat] } }));
  await eventually(
    async () => {
      const r = await gateway.gql(`{ machines { name } }`);
      return r.data?.machines?.some((m: { name: string }) => m.name === 'traced-m2');
    },
    'the machine heard',
    20_000,
    100,
  );
  const pusher = aTraceparent();
  const pushed = await postGraphql(`mutation Push { push(seat: "${seat}", build: "b-1", why: "tracing test") { __typename } }`, pusher.header);
  expect(pushed.data?.push).toEqual({ __typename: 'MutationPushSuccess' });
  await eventually(() => appliedTraceparents.some((t) => t.startsWith(`00-${pusher.traceId}-`)), 'the apply carrying the trace', 20_000, 100);
});

test('with OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf spans arrive as protobuf, under OTEL_SERVICE_NAME, sampled as OTEL_TRACES_SAMPLER says', async () => {
  const protoEnv = await testEnv('tracing_proto');
  const protoReceiver = await anOtlpReceiver();
  let proto: ChildGateway | undefined;
  try {
    proto = await spawnGateway({
      ...protoEnv.env,
      OTEL_EXPORTER_OTLP_ENDPOINT: protoReceiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_SERVICE_NAME: 'mesh-proto-test',
      // Only the traces a caller sampled: the gateway's own work (compositions) is not recorded.
      OTEL_TRACES_SAMPLER: 'parentbased_always_off',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    expect(proto.output()).toContain('tracing on (OpenTelemetry)');
    const agent = aTraceparent();
    const response = await fetch(proto.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: agent.header },
      body: JSON.stringify({ query: 'query ProtoSeats { seats { name } }' }),
    });
    expect(response.status).toBe(200);
    const traceId = Buffer.from(agent.traceId, 'hex');
    const post = await eventually(() => protoReceiver.posts.find((p) => p.body.includes(traceId)), 'a protobuf export with the trace', 20_000, 100);
    expect(post.contentType).toBe('application/x-protobuf');
    expect(post.body.includes('query ProtoSeats')).toBe(true);
    expect(post.body.includes('mesh-proto-test')).toBe(true);
    expect(protoReceiver.posts.some((p) => p.body.includes('composition'))).toBe(false);
  } finally {
    await proto?.stop();
    await protoReceiver.close();
    await protoEnv.cleanup();
  }
}, 90_000);

test('tracing is off without an OTLP endpoint, and an OTLP protocol it cannot send is refused by name', async () => {
  const { startTracing } = await import('../../src/server/tracing.js');
  const pino = (await import('pino')).default;
  const logger = pino({ level: 'silent' });
  expect(startTracing({}, logger)).toBeUndefined();
  expect(startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' }, logger)).toBeUndefined();
  expect(() => startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, logger)).toThrow(
    'OTEL_EXPORTER_OTLP_PROTOCOL must be one of http/protobuf, http/json, got "grpc"',
  );
});

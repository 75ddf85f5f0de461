import { aComposition } from '../fixtures/compositions.js';
import type { HttpInput, NatsInput, WsInput } from './doors.js';
import type { KeptSeed } from './fuzzer.js';

// Every failure the fuzzer (or issue 34's probes of every door) ever found, kept as the input
// that showed it: test/fuzz/doors.test.ts sends each alone at the start of every run, before the
// generated inputs, on the gateway named. A new failure is added here with the input the fuzzer
// printed (shrunk), what it showed and when, and stays after its fix, as its regression test.
// `<host>`, `<controller>`, `<token:read>`… stand for the gateway's own (test/fuzz/doors.ts).

const post = (body: unknown, headers: [string, string][] = []): HttpInput => ({
  method: 'POST',
  target: '/graphql',
  headers: [['Host', '<host>'], ['Content-Type', 'application/json'], ['Accept', 'application/json'], ...headers],
  body: JSON.stringify(body),
});

const upgrade = (headers: [string, string][], frames: WsInput['frames'] = []): WsInput => ({
  target: '/graphql',
  headers: [
    ['Upgrade', 'websocket'],
    ['Connection', 'Upgrade'],
    ['Sec-WebSocket-Version', '13'],
    ['Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ=='],
    ['Sec-WebSocket-Protocol', 'graphql-transport-ws'],
    ...headers,
  ],
  frames,
});

const nestedSeats = `{ ${Array.from({ length: 8 }, (_, i) => `a${i}: seats { holders { machine { holdings { seat { holders { machine { holdings { seat { holders { module } } } } } } } } } }`).join(' ')} }`;

export const KEPT_SEEDS: KeptSeed[] = [
  // Issue 34, 1: the process exited (ERR_INVALID_URL thrown in ws's verifyClient). Doors engineer.
  {
    name: 'upgrade with Host localhost:99999 and an Origin',
    door: 'graphql-ws',
    gateway: 'open',
    input: upgrade([
      ['Host', 'localhost:99999'],
      ['Origin', 'http://localhost:99999'],
    ]),
  },
  {
    name: 'upgrade with Host [::1 and an Origin',
    door: 'graphql-ws',
    gateway: 'open',
    input: upgrade([
      ['Host', '[::1'],
      ['Origin', 'http://example.test'],
    ]),
  },
  // Fuzzer, 2026-12-03: the same Host over plain HTTP is answered 500 with Yoga's stack trace ("TypeError: Invalid URL", parsedUrl). Doors engineer.
  {
    name: 'POST /graphql with Host localhost:99999',
    door: 'http',
    gateway: 'both',
    input: {
      ...post({ query: '{ __typename }' }),
      headers: [
        ['Host', 'localhost:99999'],
        ['Content-Type', 'application/json'],
      ],
    },
  },
  {
    name: 'SSE with Host localhost:99999',
    door: 'sse',
    gateway: 'closed',
    input: {
      method: 'POST',
      target: '/graphql',
      headers: [
        ['Host', 'localhost:99999'],
        ['Accept', 'text/event-stream'],
        ['Authorization', 'Bearer <token:read>'],
        ['Content-Type', 'application/json'],
      ],
      body: '{"query":"","variables":{}}',
    } satisfies HttpInput,
  },
  // Fuzzer, 2026-12-03: a request target in absolute form (`POST http://evil/graphql`) is answered 500 "Invalid URL" too. Doors engineer.
  {
    name: 'absolute-form request target',
    door: 'http',
    gateway: 'open',
    input: {
      method: 'POST',
      target: 'http://evil/graphql?query=&variables=%7B%7D',
      headers: [
        ['Host', '<host>'],
        ['Content-Type', ''],
        ['Accept', 'application/json'],
      ],
      body: '',
    } satisfies HttpInput,
  },
  // Issue 34, 7: a cursor holding a NUL answered INTERNAL; `first: 5000` a "Syntax Error". Schema engineer.
  {
    name: 'a cursor holding a NUL',
    door: 'http',
    gateway: 'open',
    input: post({ query: '{ machinesConnection(first: 5, after: "WyJtYWNoaW5lcyIsIlx1MDAwMCJd") { edges { node { name } } } }' }),
  },
  { name: 'first: 5000', door: 'http', gateway: 'open', input: post({ query: '{ machinesConnection(first: 5000) { edges { node { name } } } }' }) },
  // Issue 34, 3: nested lists eight times under aliases (282 MB with 120 holders). Schema engineer.
  {
    name: 'nested seats and holdings under eight aliases',
    door: 'http',
    gateway: 'closed',
    input: post({ query: nestedSeats }, [['Authorization', 'Bearer <token:read>']]),
  },
  // Issue 34, 5: a 1 MB JWT-shaped bearer in connection_init. Doors engineer.
  {
    name: 'a 1 MB bearer in connection_init',
    door: 'graphql-ws',
    gateway: 'closed',
    input: upgrade(
      [['Host', '<host>']],
      [{ op: 1, text: `{"type":"connection_init","payload":{"Authorization":"Bearer eyJhbGciOiJFUzI1NiJ9.eyJ${'A'.repeat(1_000_000)}.c2ln"}}` }],
    ),
  },
  // Issue 34, 4: a whole composition with an unsafe seq, from anyone on NATS. Replication engineer.
  {
    name: 'a forged composition with seq 2^53',
    door: 'status',
    gateway: 'open',
    input: { subject: 'status', body: '{"seq":9007199254740992,"machines":[]}' } satisfies NatsInput,
  },
  // Fuzzer, 2026-12-03: a composition whose seat has no name breaks every read of the status
  // ("Cannot return null for non-nullable field SeatStatus.name", INTERNAL, logged at error). Replication engineer.
  {
    name: 'a forged composition with a seat without a name',
    door: 'status',
    gateway: 'closed',
    input: {
      subject: 'status',
      body: JSON.stringify({ ...aComposition(794, 3, 2), seats: [{ held: false, holders: [] }] }),
    } satisfies NatsInput,
  },
  // Fuzzer, 2026-12-03: a client's `next` message closes the socket 4500 (graphql-ws's internal
  // error) and logs the client's mistake at error: a protocol violation is the client's, 4400. Doors engineer.
  {
    name: 'a next message from the client',
    door: 'graphql-ws',
    gateway: 'open',
    input: upgrade(
      [['Host', '<host>']],
      [
        { op: 1, text: '{"type":"connection_init","payload":{}}' },
        { op: 1, text: '{"type":"next","id":"1","payload":{}}' },
      ],
    ),
  },
  // Fuzzer, 2026-12-03: HEAD with an absolute-form target is answered 500 with no body. Doors engineer.
  {
    name: 'HEAD with an absolute-form target',
    door: 'http',
    gateway: 'open',
    input: {
      method: 'HEAD',
      target: 'http://evil/graphql?query=%7B__typename%7D',
      headers: [
        ['Host', '<host>'],
        ['Accept', 'application/json'],
      ],
      body: '',
    } satisfies HttpInput,
  },
];

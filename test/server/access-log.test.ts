import { expect, test } from 'vitest';
import { operationNameOf } from '../../src/server/access-log.js';
import { refusedCalls } from '../../src/services/calls/records.js';
import { useGateway } from '../fixtures/gateway.js';
import { eventually, wsSubscribe } from '../fixtures/live.js';
import { logInto } from '../fixtures/log.js';

// The gateway's own log, read line by line as an operator would.
const { gw: gateway } = useGateway('access_log', { env: () => ({ LOG_LEVEL: 'info' }), logger: () => logInto(lines, 'info') });
const lines: Record<string, any>[] = [];

const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(gateway.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', ...headers }, body: JSON.stringify(body) });

test('each HTTP request leaves one line with method, operation, caller, status, duration and its request id, echoed in x-request-id', async () => {
  const before = performance.now();
  const given = await post({ query: 'query Seats { seats { name } }' }, { 'x-request-id': 'trace-abc.123' });
  const tookMs = performance.now() - before;
  expect(given.headers.get('x-request-id')).toBe('trace-abc.123');
  const made = await post({ query: '{ status { seq } }', operationName: null });
  const madeId = made.headers.get('x-request-id');
  expect(madeId).toMatch(/^[0-9a-f-]{36}$/);
  // A malformed id is replaced, not echoed.
  const bad = await post({ query: 'query Again { status { seq } }' }, { 'x-request-id': 'has spaces\tand tabs' });
  expect(bad.headers.get('x-request-id')).not.toContain(' ');

  const line = await eventually(() => lines.find((l) => l.msg === 'request' && l.requestId === 'trace-abc.123'), 'the access line');
  expect(line).toMatchObject({ method: 'POST', path: '/graphql', operation: 'Seats', caller: 'local', status: 200, requestId: 'trace-abc.123' });
  // Its duration: no longer than the client waited for the answer.
  expect(line.ms).toBeGreaterThanOrEqual(0);
  expect(line.ms).toBeLessThanOrEqual(Math.ceil(tookMs));
  expect(lines.filter((l) => l.msg === 'request' && l.requestId === 'trace-abc.123')).toHaveLength(1);
  const unnamed = await eventually(() => lines.find((l) => l.msg === 'request' && l.requestId === madeId), 'the second line');
  expect(unnamed).toMatchObject({ status: 200, caller: 'local' });
  // Answered from the status cache, still one line with its operation.
  await eventually(() => lines.find((l) => l.msg === 'request' && l.operation === 'Again' && l.status === 200), 'the cached answer logged');
});

test('a WebSocket connection leaves one line as it closes: caller, operations run, close code and how long it was open', async () => {
  const before = performance.now();
  const sub = wsSubscribe(gateway.url, 'subscription Tick { ticks(count: 2, everyMs: 20) }');
  await sub.atLeast(2);
  sub.close();
  const line = await eventually(() => lines.find((l) => l.msg === 'websocket'), 'the websocket line');
  const heldOpenMs = performance.now() - before;
  expect(line).toMatchObject({ method: 'WS', path: '/graphql', caller: 'local', operations: 1, operationNames: ['Tick'] });
  expect(line.status).toBe(1000); // closed normally by the client
  expect(line.requestId).toEqual(expect.any(String));
  // How long it was open: at least the 20 ms between its two ticks, at most as long as this test held it.
  expect(line.ms).toBeGreaterThanOrEqual(20);
  expect(line.ms).toBeLessThanOrEqual(Math.ceil(heldOpenMs));
  // One line: a second socket opened and closed after it is logged, and the first still has one.
  const next = wsSubscribe(gateway.url, 'subscription Next { ticks(count: 1, everyMs: 20) }');
  await next.atLeast(1);
  next.close();
  await eventually(() => lines.find((l) => l.msg === 'websocket' && l.operationNames?.includes('Next')), 'the second socket’s line');
  expect(lines.filter((l) => l.msg === 'websocket' && l.requestId === line.requestId)).toHaveLength(1);
});

test('a hand-act is logged as it is recorded, and a call as it ends', async () => {
  const response = await post({
    query: `mutation { recordHandAct(act: "restart", target: "m1", why: "it hung", cause: "oom") { __typename } }`,
  });
  expect(response.status).toBe(200);
  const handAct = await eventually(() => lines.find((l) => l.msg === 'hand-act recorded'), 'the hand-act line');
  expect(handAct).toMatchObject({ actor: 'local', act: 'restart', target: 'm1', cause: 'oom', why: 'it hung' });

  // recordHandAct is an acting verb of the controller: a call of its own.
  const acted = await eventually(() => lines.find((l) => l.msg === 'call ended' && l.verb === 'recordHandAct'), 'the call line');
  expect(acted).toMatchObject({ caller: 'local', door: 'GRAPHQL', state: 'OK', ms: expect.any(Number) });

  // A call refused before any work is counted, never kept, so it ends no call line (issue 35).
  const refusedBefore = [...refusedCalls(gateway.mesh).values()].reduce((a, b) => a + b, 0);
  await post({ query: `mutation { callVerb(seat: "nobody-holds-this", verb: "depth", timeoutMs: 200) { __typename } }` });
  await eventually(() => [...refusedCalls(gateway.mesh).values()].reduce((a, b) => a + b, 0) > refusedBefore, 'the refusal counted');
  expect(lines.find((l) => l.msg === 'call ended' && l.verb === 'depth')).toBeUndefined();
});

// Issue 20, finding 4: the operation's name was read with a multiline regex, quadratic in newlines,
// before authentication: 10,000 newlines cost ~56 ms of loop time per request.
const HOSTILE_DOCUMENT = '\n'.repeat(500_000) + ' '.repeat(250_000) + '[{('.repeat(83_333);

test('reading the operation name of 1 MB of newlines, spaces and brackets is linear: 200 of them take well under a second of loop', () => {
  const started = performance.now();
  for (let i = 0; i < 200; i++) expect(operationNameOf({ query: HOSTILE_DOCUMENT })).toBeUndefined();
  // Generous: 200 took 33 ms here at load average 12; the quadratic regex took 166 ms for each one.
  expect(performance.now() - started).toBeLessThan(5_000);
  expect(operationNameOf({ query: 'fragment F on Seat { name }\n# a comment\nquery  Named($x: Int) { seats { ...F } }' })).toBe('Named');
  expect(operationNameOf({ query: '{ seats { query } } mutation Later { x }' })).toBe('Later');
});

test('while 1 MB documents of newlines, spaces and brackets arrive, another request is answered', async () => {
  const hostile = Array.from({ length: 8 }, () => post({ query: HOSTILE_DOCUMENT }));
  const small = post({ query: 'query Small { __typename }' });
  const answered = await small;
  expect(await answered.json()).toEqual({ data: { __typename: 'Query' } });
  for (const response of await Promise.all(hostile)) expect(response.status).toBe(400);
  const line = await eventually(() => lines.find((l) => l.msg === 'request' && l.operation === 'Small'), 'the small request logged');
  expect(line.status).toBe(200);
}, 60_000);

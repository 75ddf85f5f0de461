import { request } from 'node:http';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { REQUEST_BODY_LIMIT } from '../../src/server/request-body-limit.js';
import type { Composition } from '../../src/services/status/composition.js';
import { aComposition, oneMachineChanged } from '../fixtures/compositions.js';
import { useGateway } from '../fixtures/gateway.js';
import { publishHeard, seqPastStart } from '../fixtures/live.js';
import { NATS_URL } from '../fixtures/services.js';

const READER = 'Bearer reader-token-1';
const OPERATOR = 'Bearer operator-token-2';
const NO_READ = 'Bearer actor-token-3';
const STATUS = `query Status { status { seq composedAt tookMs trigger machines { name site state lastHeardAt modules holdings { seat module derived } }
  seats { name held holders { machine module site derived } } unheldSeats callsRunning handActsThisWeek
  repeatedCauses { cause count firstAt lastAt } plans { id seat build state tier tiers behind openedAt endedAt stopReason } } }`;

const { gw: gateway } = useGateway('statuscache', {
  tokens: [
    { name: 'dashboard', scopes: ['read'], token: 'reader-token-1' },
    { name: 'operator', scopes: ['read', 'act', 'admin'], token: 'operator-token-2' },
    { name: 'actor', scopes: ['act'], token: 'actor-token-3' },
  ],
});
let nc: NatsConnection;
let seq = 0;
let last: Composition;

beforeAll(async () => {
  nc = await connect({ servers: NATS_URL });
  seq = await seqPastStart(gateway);
  last = await publish(aComposition(++seq, 200));
});

afterAll(async () => {
  await nc?.close();
});

const publish = (composition: Composition) => publishHeard(nc, gateway, composition);

async function post(query: string, authorization: string, accept = 'application/json'): Promise<{ body: string; type: string | null; status: number }> {
  const response = await fetch(gateway.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept, authorization },
    body: JSON.stringify({ query }),
  });
  return { body: await response.text(), type: response.headers.get('content-type'), status: response.status };
}

const stats = () => gateway.http.statusCache!.stats();

test('the status query executes once per composition, operation and caller, then is served as the same bytes', async () => {
  const before = stats();
  const first = await post(STATUS, READER);
  const second = await post(STATUS, READER);
  expect(JSON.parse(first.body).data.status).toEqual(last);
  expect(second).toEqual(first);
  expect(stats().misses - before.misses).toBe(1);
  expect(stats().hits - before.hits).toBe(1);

  const operator = await post(STATUS, OPERATOR);
  expect(operator.body).toBe(first.body);
  expect(stats().misses - before.misses).toBe(2);

  last = await publish(oneMachineChanged(last, ++seq));
  const after = await post(STATUS, READER);
  expect(JSON.parse(after.body).data.status.seq).toBe(seq);
  expect(stats().misses - before.misses).toBe(3);
});

test('requests arriving together after a composition wait for one execution', async () => {
  last = await publish(oneMachineChanged(last, ++seq));
  const before = stats();
  const bodies = await Promise.all(Array.from({ length: 20 }, () => post(STATUS, READER)));
  expect(new Set(bodies.map((b) => b.body)).size).toBe(1);
  expect(JSON.parse(bodies[0].body).data.status.seq).toBe(seq);
  expect(stats().misses - before.misses).toBe(1);
  expect(stats().hits - before.hits).toBe(19);
});

test('the cached response answers in the media type asked for', async () => {
  const json = await post(STATUS, READER);
  const graphqlResponse = await post(STATUS, READER, 'application/graphql-response+json');
  expect(json.type).toBe('application/json; charset=utf-8');
  expect(graphqlResponse.type).toBe('application/graphql-response+json; charset=utf-8');
  expect(graphqlResponse.body).toBe(json.body);
});

test('a query reading more than the composition, or answered with errors, is never kept', async () => {
  const before = stats();
  const mixed = '{ status { seq } machines { name } }';
  await post(mixed, READER);
  await post(mixed, READER);
  expect(stats().hits).toBe(before.hits);

  await post(STATUS, READER);
  const refused = await post(STATUS, NO_READ);
  expect(JSON.parse(refused.body).errors[0].message).toMatch(/actor may not read/);
  const again = await post(STATUS, NO_READ);
  expect(again.body).toBe(refused.body);
  expect(stats().hits - before.hits).toBe(1);
});

test('a request body over the limit is refused with 413, whether its length is declared or chunked', async () => {
  const send = (chunked: boolean) =>
    new Promise<number>((resolve, reject) => {
      const size = REQUEST_BODY_LIMIT + 1;
      const req = request(gateway.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: READER, ...(chunked ? {} : { 'content-length': String(size) }) },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode!);
        req.destroy();
      });
      req.on('error', (error) => (req.destroyed ? undefined : reject(error)));
      const chunk = Buffer.alloc(1 << 20, 0x20);
      let sent = 0;
      const write = () => {
        while (sent < size && !req.destroyed) {
          const piece = chunk.subarray(0, Math.min(chunk.length, size - sent));
          sent += piece.length;
          if (!req.write(piece)) return void req.once('drain', write);
        }
        if (!req.destroyed) req.end();
      };
      write();
    });
  expect(await send(false)).toBe(413);
  expect(await send(true)).toBe(413);
  expect((await post(STATUS, READER)).status).toBe(200);
});

import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { natsCall as callOverNats } from '../fixtures/calls.js';
import { useGateway } from '../fixtures/gateway.js';
import { logInto } from '../fixtures/log.js';
import { HOLD_SEAT } from '../fixtures/operations.js';
import { RawWsClient } from '../fixtures/ws-client.js';

const { gw, env } = useGateway('hostile', { logger: () => logInto(logged, 'info') });
let nc: NatsConnection;
const logged: Record<string, unknown>[] = [];

beforeAll(async () => {
  nc = await connect({ servers: env.env.NATS_URL });
  await gql('mutation { defineSeat(input: { name: "kept", scope: "site", decided: "as it was" }) { __typename } }');
});
afterAll(async () => {
  await nc?.close();
});
beforeEach(() => {
  logged.length = 0;
});

type Answer = { status: number; data?: any; errors?: { message: string; extensions?: { code?: string } }[] };

async function gql(query: string, variables?: Record<string, unknown>): Promise<Answer> {
  const response = await fetch(gw.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, ...((await response.json()) as object) };
}

/** A NATS request to a controller verb: its answer body and the call id it was recorded under. */
const natsCall = (verb: string, body: object | string) => callOverNats(nc, env, verb, body, { user: 'hostile-tester' });

/** Nothing the gateway logged since the test began is a server fault (level error or above). */
const noServerFault = () => expect(logged.filter((line) => (line.level as number) >= 50)).toEqual([]);

/** A clear refusal: one error with code INVALID whose message matches, never a masked INTERNAL. */
function refusedInvalid(answer: Answer, message: RegExp) {
  expect(answer.errors?.[0]).toMatchObject({ message: expect.stringMatching(message), extensions: { code: 'INVALID' } });
  expect(JSON.stringify(answer)).not.toMatch(/INTERNAL|Unexpected error|RangeError|0x00/);
  noServerFault();
}

const seatKept = async () => expect((await gql('{ seat(name: "kept") { scope decided } }')).data.seat).toEqual({ scope: 'site', decided: 'as it was' });
const NUL = 'a\u0000b';
const DEFINE = 'mutation($input: SeatInput!) { defineSeat(input: $input) { __typename ... on Error { code message } ... on InvalidError { field } } }';

describe('a NUL character is refused as INVALID, saying so, and changes nothing', () => {
  test.each(['scope', 'delivers', 'decided'])('in defineSeat %s, as a variable', async (field) => {
    refusedInvalid(await gql(DEFINE, { input: { name: 'kept', [field]: NUL } }), /NUL character/);
    await seatKept();
  });

  test('in a string literal of a query (machines(site:))', async () => {
    refusedInvalid(await gql('{ machines(site: "a\\u0000b") { name } }'), /NUL character/);
  });

  test('in a hand-act why, over GraphQL', async () => {
    const answer = await gql('mutation($why: String!) { recordHandAct(act: "restarted", why: $why) { __typename } }', { why: `it hung ${NUL}` });
    refusedInvalid(answer, /NUL character/);
  });

  test('in a hand-act why, on the NATS door', async () => {
    const { body } = await natsCall('recordHandAct', { act: 'restarted', why: `it hung ${NUL}` });
    expect(body).toMatchObject({ ok: false, error: { code: 'INVALID', message: expect.stringMatching(/NUL character/) } });
    noServerFault();
  });

  test("in a variable over graphql-ws, answered as that operation's error", async () => {
    const client = await RawWsClient.connect(gw.url);
    client.subscribe('nul', 'query($site: String) { machines(site: $site) { name } }', { site: NUL });
    await client.until(() => client.errors.some((e) => e.id === 'nul'), 5_000, 'the error');
    expect(client.errors.find((e) => e.id === 'nul')!.payload).toMatchObject([
      { message: expect.stringMatching(/NUL character/), extensions: { code: 'INVALID' } },
    ]);
    await client.close();
    noServerFault();
  });
});

describe('a date PostgreSQL cannot hold is refused as INVALID', () => {
  test.each(['-271821-04-20T00:00:00.000Z', '+275760-09-13T00:00:00.000Z', '0000-12-31T23:59:59.999Z', '+010000-01-01T00:00:00.000Z'])(
    'durations(since: %s)',
    async (since) => {
      refusedInvalid(await gql(`{ durations(since: "${since}") { kind } }`), /DateTime must be between 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z/);
      refusedInvalid(await gql('query($since: DateTime) { durations(since: $since) { kind } }', { since }), /DateTime must be between/);
    },
  );

  test('the first and last instants allowed are read', async () => {
    for (const since of ['0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z']) {
      const answer = await gql(`{ durations(since: "${since}") { kind } }`);
      expect(answer.errors).toBeUndefined();
    }
    noServerFault();
  });

  test('handActs since out of range on the NATS door', async () => {
    const { body } = await natsCall('handActs', { since: '-271821-04-20T00:00:00.000Z' });
    expect(body).toMatchObject({ ok: false, error: { code: 'INVALID', message: expect.stringMatching(/since must be DateTime/) } });
    noServerFault();
  });
});

test('variables=%7B on GET is a 400 saying the variables are not JSON', async () => {
  const response = await fetch(`${gw.url}?query=${encodeURIComponent('{ __typename }')}&variables=%7B`, {
    headers: { accept: 'application/json', 'x-graphql-yoga-csrf': '1' },
  });
  expect(response.status).toBe(400);
  const answer = (await response.json()) as Answer;
  expect(answer.errors?.[0]?.message).toMatch(/variables/i);
  expect(JSON.stringify(answer)).not.toMatch(/INTERNAL|Unexpected error/);
  noServerFault();
});

describe('a JSON argument nested 100,000 deep is refused, and the gateway goes on', () => {
  // Written as text: JSON.stringify itself overflows on such a value.
  const DEEP = `${'['.repeat(100_000)}"x"${']'.repeat(100_000)}`;

  test('as a GraphQL variable (callVerb args)', async () => {
    const query = 'mutation($args: JSON) { callVerb(seat: "kept", verb: "peek", args: $args) { __typename } }';
    const response = await fetch(gw.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: `{"query":${JSON.stringify(query)},"variables":{"args":{"a":${DEEP}}}}`,
    });
    const answer = { status: response.status, ...((await response.json()) as object) };
    refusedInvalid(answer, /the variables nest more than 32 deep/);
  });

  test('as a JSON literal 40 deep (within the document nesting limit): the JSON scalar refuses it', async () => {
    const answer = await gql(`mutation { callVerb(seat: "kept", verb: "peek", args: { a: ${'['.repeat(40)}1${']'.repeat(40)} }) { __typename } }`);
    refusedInvalid(answer, /JSON nests more than 32 deep/);
  });

  test('as the variables of a status query (which the status query cache keys)', async () => {
    const response = await fetch(gw.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: `{"query":"query($x: JSON) { status { seq } }","variables":{"x":${DEEP}}}`,
    });
    expect(response.status).toBe(400);
    refusedInvalid((await response.json()) as Answer, /the variables nest more than 32 deep/);
  });

  test("as the variables of a graphql-ws operation: that operation's error, the socket goes on", async () => {
    const client = await RawWsClient.connect(gw.url);
    client.socket.send(`{"id":"deep","type":"subscribe","payload":{"query":"subscription($x: JSON) { status { seq } }","variables":{"x":${DEEP}}}}`);
    await client.until(() => client.errors.some((e) => e.id === 'deep'), 5_000, 'the error');
    expect(client.errors.find((e) => e.id === 'deep')!.payload).toMatchObject([
      { message: 'the variables nest more than 32 deep', extensions: { code: 'INVALID' } },
    ]);
    client.subscribe('after', '{ __typename }');
    await client.until(() => client.completed.has('after'), 5_000, 'a later operation');
    await client.close();
    noServerFault();
  });

  test('on the NATS door: refused INVALID, counted, not kept (issue 35)', async () => {
    const { body, callId } = await natsCall('recordHandAct', `{"act":${DEEP},"why":"deep"}`);
    expect(body).toMatchObject({ ok: false, error: { code: 'INVALID', message: expect.stringMatching(/nest more than 32 deep/) } });
    expect(callId).toBeUndefined();
    noServerFault();
  });
});

test('a list literal nested 2,000 deep is a 400 INVALID, not a stack overflow', async () => {
  const answer = await gql(`{ seat(name: ${'['.repeat(2_000)}"x"${']'.repeat(2_000)}) { name } }`);
  expect(answer.status).toBe(400);
  refusedInvalid(answer, /nests brackets more than 64 deep/);
});

describe('a negative first is refused on the NATS door as on GraphQL', () => {
  test.each(['calls', 'handActs', 'plans'])('%s(first: -1)', async (verb) => {
    const { body } = await natsCall(verb, { first: -1 });
    expect(body).toMatchObject({ ok: false, error: { code: 'INVALID', message: expect.stringMatching(/first must be 0/) } });
    noServerFault();
  });
});

describe('free text is bounded: refused as data naming the field, and nothing is stored', () => {
  test.each([
    ['decided', 4096],
    ['delivers', 4096],
    ['scope', 200],
  ])('defineSeat %s over %i characters', async (field, max) => {
    const { data } = await gql(DEFINE, { input: { name: 'kept', [field]: 'x'.repeat(max + 1) } });
    expect(data.defineSeat).toEqual({ __typename: 'InvalidError', code: 'INVALID', field, message: `${field} is ${max + 1} characters; at most ${max}` });
    await seatKept();
    noServerFault();
  });

  test('holdSeat scope over 200 characters', async () => {
    const { data } = await gql(HOLD_SEAT, { seat: 'kept', machine: 'm1', module: 'broker', scope: 'x'.repeat(201) });
    expect(data.holdSeat).toMatchObject({ __typename: 'InvalidError', field: 'scope', message: 'scope is 201 characters; at most 200' });
    noServerFault();
  });

  test('a 1 MB decided is refused', async () => {
    const { data } = await gql(DEFINE, { input: { name: 'kept', decided: 'x'.repeat(1 << 20) } });
    expect(data.defineSeat).toMatchObject({ __typename: 'InvalidError', field: 'decided' });
    await seatKept();
  });

  test('a decided of 4096 characters is kept', async () => {
    const { data } = await gql(DEFINE, { input: { name: 'roomy', decided: 'x'.repeat(4096) } });
    expect(data.defineSeat.__typename).toBe('MutationDefineSeatSuccess');
  });
});

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { GUARDS } from '../../src/server/guards/index.js';
import { DOORS, type Door } from '../../src/server/guards/refusal.js';
import { useGateway } from '../fixtures/gateway.js';
import { aJwksFile, aJwtOf, aSigningKey } from '../fixtures/jwks.js';
import { startTestGateway, type TestGateway, type TokenFixture } from '../fixtures/services.js';
import { RawWsClient } from '../fixtures/ws-client.js';
import { type Outcome, probeConnect, probeHttp, probeSubscribe, type Tweak } from './door-probes.js';

// Issue 36, item 1: every check a request meets is written once (src/server/guards/), and every
// door runs that one list. This walks every door against every guard: for each guard, a request
// it refuses, sent at each door where the guard holds, is refused there with the guard's status
// (an upgrade's status, a socket's close code) and message. A guard added to the list without a
// case here fails the first test; a door where a guard does not hold says why in the guard.

/** The open gateway's rate: every caller there is `local`, and one second refills one operation. */
const PER_SECOND = 1;
const PER_CALLER = 2;
const GUARD_TOKENS: TokenFixture[] = GUARDS.map((guard) => ({ name: guard.name, scopes: ['read'], token: `token-of-${guard.name}-walk` }));
const tokenOf = (guard: string) => `token-of-${guard}-walk`;

/** The tokened gateway takes JWTs too: a JWT past its expiry is the caller guard's other refusal. */
let jwks: ReturnType<typeof aJwksFile>;
const EXPIRED_AGO_S = 3_600;
let expiredJwt = '';
beforeAll(async () => {
  const key = await aSigningKey('walk');
  jwks = aJwksFile([key]);
  expiredJwt = await aJwtOf(key, { sub: 'expired' }, { expiresInS: -EXPIRED_AGO_S });
});
afterAll(() => jwks?.remove());
const { gw: tokened, env } = useGateway('walk', {
  tokens: GUARD_TOKENS,
  env: () => ({ ...jwks.env, MESH_WS_SOCKETS_PER_CALLER: String(PER_CALLER), MESH_WS_OPERATIONS_PER_SOCKET: '1' }),
});
/** An open gateway (no tokens: loopback names only), for the Host guard, the rate and the drain. */
let open: TestGateway;
beforeAll(async () => {
  open = await startTestGateway({ ...env.env, MESH_OPS_PER_SECOND: String(PER_SECOND) });
}, 60_000);
afterAll(async () => {
  await open?.stop();
});

/** A request a guard refuses, and the refusal every door it holds at must give. */
interface Case {
  /** The gateway whose settings make the guard refuse. */
  on: 'tokened' | 'open';
  tweak: Tweak;
  expected: { status: number; code: string; message: string; close?: number };
  /** Before each door's probe (the caps: sockets held; the rate: operations spent); returns what undoes it. */
  before?(url: string, door: Door): Promise<() => Promise<void>>;
  /** A subscription held open on the socket before the probed operation (the operations per socket). */
  first?: string;
  /** Leaves the gateway refusing everything: run after every other case. */
  last?: boolean;
  /** Times the probe (with its `before`) is sent again when not refused: the rate's races the bucket's refill on a loaded machine. */
  again?: number;
}

const NO_HASH = 'f'.repeat(64);
const TICKS = 'subscription { ticks(count: 100000, everyMs: 1000) }';

const CASES: Record<string, Case> = {
  target: {
    on: 'tokened',
    tweak: { host: '[::1' },
    expected: {
      status: 400,
      code: 'BAD_REQUEST',
      message: 'the request target and Host header do not make a URL: send an origin-form target (/graphql) with a valid Host',
    },
  },
  host: {
    on: 'open',
    tweak: { host: 'rebound.example:4000' },
    expected: {
      status: 403,
      code: 'FORBIDDEN_HOST',
      message: `this gateway has no MESH_TOKENS_FILE and answers loopback names only (127.0.0.1, localhost, [::1]); Host "rebound.example:4000" is refused`,
    },
  },
  drain: {
    on: 'open',
    tweak: {},
    expected: { status: 503, code: 'UNAVAILABLE', message: 'the gateway is stopping; try again' },
    before: async () => {
      open.http.drain.begin();
      return async () => undefined;
    },
    last: true,
  },
  origin: {
    on: 'tokened',
    tweak: { origin: 'https://evil.example' },
    expected: { status: 403, code: 'FORBIDDEN_ORIGIN', message: 'Forbidden: foreign Origin' },
  },
  caller: {
    on: 'tokened',
    tweak: { authorization: 'Bearer not-a-token' },
    expected: { status: 401, code: 'FORBIDDEN', message: 'the token is not known', close: 4403 },
  },
  caps: {
    on: 'tokened',
    tweak: {},
    expected: { status: 429, code: 'TOO_MANY_REQUESTS', message: `caps has ${PER_CALLER} sockets and streams open; at most ${PER_CALLER}`, close: 4429 },
    before: async (url) => {
      const held = await Promise.all(Array.from({ length: PER_CALLER }, () => RawWsClient.connect(url, `Bearer ${tokenOf('caps')}`)));
      return async () => void (await Promise.all(held.map((socket) => socket.close())));
    },
  },
  operations: {
    on: 'tokened',
    tweak: {},
    first: TICKS,
    expected: { status: 429, code: 'TOO_MANY_REQUESTS', message: 'this socket runs 1 operations; at most 1: complete one first' },
  },
  body: { on: 'tokened', tweak: { contentLength: '30000000' }, expected: { status: 413, code: 'REQUEST_ENTITY_TOO_LARGE', message: 'Request body too large' } },
  csrf: {
    on: 'tokened',
    tweak: { contentType: 'text/plain', noCsrfHeader: true },
    expected: {
      status: 403,
      code: 'CSRF_REFUSED',
      message: 'a request without a JSON content type must carry the x-graphql-yoga-csrf header (cross-site request forgery prevention)',
    },
  },
  rate: {
    on: 'open',
    tweak: {},
    expected: { status: 429, code: 'TOO_MANY_REQUESTS', message: `local asks more than ${PER_SECOND} operations a second; retry after 1 s` },
    again: 2,
    before: async (url) => {
      // Spent until refused: the bucket is empty then, and the probe follows within a second, before one operation refills.
      for (let spent = 0; spent < 20; spent++) {
        const outcome = await probeHttp(url, 'POST', tokenOf('rate'), {});
        if (outcome.kind === 'http' && outcome.status === 429) break;
      }
      return async () => undefined;
    },
  },
  params: {
    on: 'tokened',
    tweak: { variables: { name: 'a\u0000b' } },
    expected: { status: 400, code: 'INVALID', message: 'a string holds a NUL character (U+0000), which no name or text may hold' },
  },
  persisted: {
    on: 'tokened',
    tweak: { extensions: { persistedQuery: { version: 1, sha256Hash: NO_HASH } } },
    expected: { status: 400, code: 'PERSISTED_QUERY_NOT_FOUND', message: `no persisted operation has the hash "${NO_HASH}"` },
  },
};

/** The message as it stands in a JSON body, escaped. */
const inJson = (message: string) => JSON.stringify(message).slice(1, -1);

/** Sends the case's request at `door`: the status fast path's is a status query its caller was answered once already. */
async function probe(url: string, door: Door, guard: string, found: Case): Promise<Outcome> {
  const token = tokenOf(guard);
  if (door === 'status fast path') await probeHttp(url, door, token, {});
  const undo = (await found.before?.(url, door)) ?? (async () => undefined);
  try {
    if (door === 'graphql-ws connect') return await probeConnect(url, token, found.tweak);
    if (door === 'graphql-ws subscribe') return await probeSubscribe(url, token, found.tweak, found.first);
    return await probeHttp(url, door, token, found.tweak);
  } finally {
    await undo();
  }
}

/** What a refusal of `stage` at `door` must look like. */
function expectRefused(outcome: Outcome, door: Door, stage: string, expected: Case['expected']): void {
  const { status, code, message, close } = expected;
  if (door === 'graphql-ws subscribe') return void expect(outcome).toEqual({ kind: 'error', message, code });
  if (door === 'graphql-ws connect' && stage !== 'arrival') {
    const reason = close === 4403 ? `Forbidden: ${message}` : message;
    return void expect(outcome).toEqual({ kind: 'closed', code: close, reason });
  }
  expect(outcome).toMatchObject({ kind: 'http', status });
  const text = (outcome as { text: string }).text;
  // An upgrade's refusal is the bare message; every HTTP answer a GraphQL error with its code.
  if (door === 'graphql-ws connect') return void expect(text).toBe(message);
  expect(text).toContain(inJson(message));
  expect(text).toContain(`"code":"${code}"`);
}

test('every guard has a case here, and every door it does not hold at says why', () => {
  expect(Object.keys(CASES).sort()).toEqual(GUARDS.map((guard) => guard.name).sort());
  for (const guard of GUARDS) {
    for (const door of DOORS) {
      const at = guard.at[door];
      expect(at === true || (typeof at === 'string' && at.length > 10), `${guard.name} at ${door}`).toBe(true);
    }
  }
});

const ordered = [...GUARDS].sort((a, b) => Number(CASES[a.name]?.last ?? false) - Number(CASES[b.name]?.last ?? false));
for (const guard of ordered) {
  const found = CASES[guard.name];
  const doors = DOORS.filter((door) => guard.at[door] === true);
  describe.sequential(`the ${guard.name} guard`, () => {
    test.each(doors)(`refuses at %s as it does everywhere`, async (door) => {
      if (!found) throw new Error(`no case for the ${guard.name} guard`);
      const url = found.on === 'open' ? open.url : tokened.url;
      for (let attempt = 0; ; attempt++) {
        const outcome = await probe(url, door, guard.name, found);
        try {
          return expectRefused(outcome, door, guard.stage, found.expected);
        } catch (error) {
          if (attempt >= (found.again ?? 0)) throw error;
        }
      }
    });
  });
}

// The caller guard's refusal of a JWT past its expiry (verified as the request is admitted, or
// connection_init read), at every door the guard holds at: the same message everywhere.
const callerGuard = GUARDS.find((guard) => guard.name === 'caller');
describe.sequential('the caller guard, a JWT past its expiry', () => {
  test.each(DOORS.filter((door) => callerGuard?.at[door] === true))('refuses at %s as it does everywhere', async (door) => {
    const exp = JSON.parse(Buffer.from(expiredJwt.split('.')[1] ?? '', 'base64url').toString()).exp as number;
    const expired: Case = {
      on: 'tokened',
      tweak: { authorization: `Bearer ${expiredJwt}` },
      expected: { status: 401, code: 'FORBIDDEN', message: `the token expired at ${new Date(exp * 1000).toISOString()}`, close: 4403 },
    };
    expectRefused(await probe(tokened.url, door, 'caller', expired), door, 'caller', expired.expected);
  });
});

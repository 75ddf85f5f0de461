import { connect, type NatsConnection } from '@nats-io/transport-node';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { CONTROLLER_VERBS } from '../../src/services/controller/verbs.js';
import { useGateway } from '../fixtures/gateway.js';
import { documents, TYPED_OPERATIONS, variables } from '../fixtures/hostile-values.js';
import { eventually } from '../fixtures/live.js';
import { logInto } from '../fixtures/log.js';

// Property-based fuzzing against one gateway. Every property runs with a fixed seed, printed by
// fast-check on failure with the counterexample and its path; FUZZ_SEED=<n> replays another seed
// (docs/access.md, "Fuzzing and fault tests").
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_201);
const RUNS = Number(process.env.FUZZ_RUNS ?? 200);
const params = { seed: SEED, numRuns: RUNS, endOnFailure: true };
const PROPERTY_TIMEOUT_MS = 30_000;

// The fuzz sends hundreds of operations a second from one caller: the rate cap is not under test here.
const { gw, env } = useGateway('fuzz', { env: () => ({ MESH_OPS_PER_SECOND: '1000000' }), logger: () => logInto(logged, 'warn') });
/** What the gateway logged at warn or above: a line at error would be a server fault. */
const logged: { level: number; msg?: string }[] = [];
let nc: NatsConnection;

beforeAll(async () => {
  nc = await connect({ servers: env.env.NATS_URL });
});
afterEach(() => {
  // Bad input is the caller's fault: nothing of it is logged as a server fault.
  expect(logged.filter((line) => line.level >= 50)).toEqual([]);
  logged.length = 0;
});
afterAll(async () => {
  await nc?.close();
});

/** POSTs a raw body to /graphql as a client would: the status and the parsed answer (or the text when it is not JSON). */
async function post(body: string): Promise<{ status: number; text: string; json?: any }> {
  const response = await fetch(gw.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body });
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, text, json };
}

/** The gateway still serves: `{ __typename }` is answered with data. */
async function stillAnswers(): Promise<void> {
  const { status, json } = await post(JSON.stringify({ query: '{ __typename }' }));
  expect(status).toBe(200);
  expect(json).toEqual({ data: { __typename: 'Query' } });
}

/** No error of the answer is a masked server fault. */
function noInternal(answer: { status: number; text: string; json?: any }): void {
  expect(answer.status, answer.text).toBeLessThan(500);
  const codes = ((answer.json?.errors ?? []) as { extensions?: { code?: string } }[]).map((e) => e.extensions?.code);
  expect(codes, answer.text).not.toContain('INTERNAL');
  expect(codes, answer.text).not.toContain('INTERNAL_SERVER_ERROR');
  expect(answer.text).not.toMatch(/Unexpected error|RangeError|Maximum call stack/);
}

describe('arbitrary GraphQL over HTTP', () => {
  test(
    'arbitrary documents and variables are answered below 500, never as INTERNAL, and the gateway goes on answering',
    async () => {
      await fc.assert(
        fc.asyncProperty(documents, variables, async (query, vars) => {
          noInternal(await post(JSON.stringify({ query, variables: vars })));
        }),
        params,
      );
      await stillAnswers();
    },
    PROPERTY_TIMEOUT_MS,
  );

  test(
    'arbitrary request bodies (not JSON, wrong shapes) are answered below 500, never as INTERNAL',
    async () => {
      const bodies = fc.oneof(
        fc.string({ unit: 'binary', maxLength: 200 }),
        fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
        fc.tuple(documents, fc.jsonValue({ maxDepth: 2 })).map(([query, operationName]) => JSON.stringify({ query, operationName, extensions: operationName })),
      );
      await fc.assert(
        fc.asyncProperty(bodies, async (body) => {
          noInternal(await post(body));
        }),
        params,
      );
      await stillAnswers();
    },
    PROPERTY_TIMEOUT_MS,
  );
});

describe('every operation of the schema with hostile variables', () => {
  test(
    'each query and mutation, its variables of their types with hostile values, is answered below 500 and never as INTERNAL',
    async () => {
      const seen = { data: 0, refused: 0 };
      const cases = fc.constantFrom(...TYPED_OPERATIONS).chain((op) => fc.tuple(fc.constant(op), op.variables));
      await fc.assert(
        fc.asyncProperty(cases, async ([op, vars]) => {
          const answer = await post(JSON.stringify({ query: op.query, variables: vars }));
          noInternal(answer);
          if (answer.json?.errors) seen.refused++;
          else seen.data++;
        }),
        { ...params, numRuns: RUNS * 2 },
      );
      // Neither all refused at the door nor all accepted: the cases reach the resolvers and their checks.
      expect(seen.data).toBeGreaterThan(0);
      expect(seen.refused).toBeGreaterThan(0);
      await stillAnswers();
    },
    PROPERTY_TIMEOUT_MS,
  );
});

describe('arbitrary news on the bus', () => {
  test(
    'arbitrary news bodies and subjects are counted malformed or ingested, and a good heartbeat after them is stored',
    async () => {
      const before = { ...gw.news.stats };
      // Any token NATS carries as a subject (no whitespace, no wildcard); a dot in it makes more tokens.
      const token = fc.oneof(
        fc.stringMatching(/^[a-z0-9-]{1,12}$/),
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }).filter((t) => !/[\s*>]|^\.|\.$|\.\./.test(t) && !t.includes('\u0000')),
      );
      const field = fc.oneof(fc.string({ unit: 'binary' }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.jsonValue({ maxDepth: 2 }));
      const body = fc.oneof(
        fc.string({ unit: 'binary', maxLength: 300 }),
        fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
        fc
          .record(
            {
              kind: fc.oneof(fc.constantFrom('heartbeat', 'report', 'started', 'finished', 'failed'), fc.string()),
              at: fc.oneof(
                fc.date({ noInvalidDate: false }).map((d) => (Number.isNaN(d.getTime()) ? 'x' : d.toISOString())),
                field,
              ),
              site: field,
              modules: fc.oneof(fc.array(fc.string({ unit: 'binary', maxLength: 20 }), { maxLength: 5 }), field),
              claims: field,
              plan: field,
              build: field,
              ok: field,
              detail: field,
              module: field,
            },
            { requiredKeys: ['kind'] },
          )
          .map((v) => JSON.stringify(v)),
      );
      let sent = 0;
      await fc.assert(
        fc.asyncProperty(fc.constantFrom('machine', 'build'), token, body, async (kind, name, payload) => {
          nc.publish(`${env.subjects}.news.${kind}.${name}`, payload);
          sent++;
        }),
        { ...params, numRuns: RUNS * 2 },
      );
      await nc.flush();
      const machine = `fuzz-after-${Date.now()}`;
      nc.publish(`${env.subjects}.news.machine.${machine}`, JSON.stringify({ kind: 'heartbeat', modules: ['broker'] }));
      await nc.flush();
      await eventually(
        async () => (await gw.mesh.db.selectFrom('machine').select('name').where('name', '=', machine).executeTakeFirst()) !== undefined,
        'the good heartbeat sent after the fuzz to be stored',
        15_000,
        100,
      );
      // Every message published on a news subject (and the good heartbeat) was heard, and each was
      // judged one way or the other: malformed, ingested, or refused by the store as poison.
      const stats = gw.news.stats;
      const judged = () => stats.malformed - before.malformed + (stats.ingested - before.ingested) + (stats.poison - before.poison);
      await eventually(() => judged() === sent + 1, `all ${sent + 1} messages judged (have ${judged()})`, 5_000, 50);
      expect(stats.received - before.received).toBe(sent + 1);
      expect(stats.malformed - before.malformed).toBeGreaterThan(0);
      await stillAnswers();
    },
    PROPERTY_TIMEOUT_MS,
  );
});

const READING_VERBS = ['status', 'plans', 'calls', 'call', 'handActs', 'repeatedCauses', 'durations'];
const ACTING_VERBS = [
  'recordHandAct',
  'push',
  'stopPlan',
  'resumePlan',
  'closePlan',
  'resetConsumer',
  'removeAlias',
  'retireSeat',
  'forgetMachine',
  'callVerb',
];

describe('arbitrary NATS requests to controller verbs', () => {
  test(
    'every reply is {ok:true} or {ok:false, error:{code}}, never INTERNAL for bad input',
    async () => {
      const argValue = fc.oneof(
        fc.string({ unit: 'binary', maxLength: 40 }),
        fc.integer(),
        fc.double(),
        fc.boolean(),
        fc.constant(null),
        fc.jsonValue({ maxDepth: 3 }),
      );
      const args = fc.dictionary(
        fc.oneof(
          fc.constantFrom(
            'act',
            'why',
            'target',
            'cause',
            'plan',
            'seat',
            'verb',
            'args',
            'id',
            'first',
            'after',
            'since',
            'timeoutMs',
            'name',
            'machine',
            'consumer',
            'stream',
            'alias',
          ),
          fc.string(),
        ),
        argValue,
        { maxKeys: 6 },
      );
      const body = fc.oneof(
        fc.string({ unit: 'binary', maxLength: 200 }),
        fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
        args.map((v) => JSON.stringify(v)),
      );
      const subject = fc.oneof(
        fc.constantFrom(...READING_VERBS).map((verb) => `${env.subjects}.seat.${env.controller}.${verb}`),
        fc.constantFrom(...READING_VERBS, ...ACTING_VERBS).map((verb) => `${env.subjects}.seat.${env.controller}.${verb}.fuzzer`),
      );
      await fc.assert(
        fc.asyncProperty(subject, body, async (to, payload) => {
          const reply = await nc.request(to, payload, { timeout: 10_000 });
          const text = reply.string();
          const answer = JSON.parse(text);
          if (answer.ok === true) expect(Object.keys(answer), text).toContain('answer');
          else {
            expect(answer, text).toMatchObject({ ok: false, error: { code: expect.any(String) } });
            expect(answer.error.code, `${to} ${payload}\n${text}`).not.toBe('INTERNAL');
          }
        }),
        params,
      );
      await stillAnswers();
    },
    PROPERTY_TIMEOUT_MS,
  );

  test(
    "each verb's own arguments with nasty values (or of the wrong type) are answered with a code, never INTERNAL",
    async () => {
      const text = fc.oneof(
        fc.string({ unit: 'binary', maxLength: 30 }),
        fc.constantFrom('', ' ', 'a\u0000b', 'x'.repeat(5_000), 'queue', 'mesh-controller', env.controller, '*', '>', 'a.b', '..', '0mx3eakrpc00c7140c7'),
      );
      const byType: Record<string, fc.Arbitrary<unknown>> = {
        String: text,
        ID: text,
        Int: fc.oneof(fc.integer(), fc.constantFrom(-1, 0, 1, 2 ** 31, 2 ** 53, 1e21, 1.5, -0.5, Number.MAX_VALUE), fc.double()),
        DateTime: fc.oneof(
          fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
          fc.constantFrom('-271821-04-20T00:00:00.000Z', '0000-01-01T00:00:00Z', '+275760-09-13T00:00:00.000Z', 'yesterday', '2026-13-45', '', '1'),
          fc.integer(),
        ),
        JSON: fc.jsonValue({ maxDepth: 4 }),
      };
      const anyValue = fc.oneof(fc.jsonValue({ maxDepth: 2 }), text);
      const seen = { ok: 0, refused: 0 };
      const requests = fc
        .constantFrom(...CONTROLLER_VERBS)
        .chain((verb) =>
          fc.tuple(
            fc.constant(verb),
            fc.record(
              Object.fromEntries([
                ...verb.args.map((arg) => [arg.name, fc.oneof({ weight: 4, arbitrary: byType[arg.type] ?? anyValue }, { weight: 1, arbitrary: anyValue })]),
                ...(verb.acting ? ['why', 'cause', 'condition'].map((name) => [name, text]) : []),
              ]),
              { requiredKeys: [] },
            ),
          ),
        );
      await fc.assert(
        fc.asyncProperty(requests, async ([verb, args]) => {
          const reply = await nc.request(`${env.subjects}.seat.${env.controller}.${verb.name}.fuzzer`, JSON.stringify(args), { timeout: 10_000 });
          const text = reply.string();
          const answer = JSON.parse(text);
          if (answer.ok === true) seen.ok++;
          else {
            seen.refused++;
            expect(answer, text).toMatchObject({ ok: false, error: { code: expect.any(String) } });
            expect(answer.error.code, `${verb.name} ${JSON.stringify(args)}\n${text}`).not.toBe('INTERNAL');
          }
        }),
        params,
      );
      // Some cases were acted on or answered, others refused: the values reach the verbs' own checks.
      expect(seen.ok).toBeGreaterThan(0);
      expect(seen.refused).toBeGreaterThan(0);
      await stillAnswers();
    },
    PROPERTY_TIMEOUT_MS,
  );
});

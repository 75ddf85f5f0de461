import { readdirSync, readFileSync } from 'node:fs';
import { Kind, parse } from 'graphql';
import { beforeAll, describe, expect, test } from 'vitest';
import { schema } from '../../src/schema/index.js';
import { QUERY_LIMITS } from '../../src/server/http.js';
import { costRefusal } from '../../src/server/query-cost.js';
import { recordHeartbeats } from '../../src/services/machines/machines.js';
import { defineSeat } from '../../src/services/seats/define.js';
import { useGateway } from '../fixtures/gateway.js';
import { RawWsClient } from '../fixtures/ws-client.js';

const { gw } = useGateway('cost');

/** Machines that all claim the seat `wide`: its derived holders. */
const CLAIMERS = 120;

beforeAll(async () => {
  const { db, catalogue } = gw.mesh;
  await defineSeat(db, catalogue, { name: 'wide' });
  const at = new Date();
  await recordHeartbeats(
    db,
    Array.from({ length: CLAIMERS }, (_, i) => ({ machine: `w${String(i).padStart(3, '0')}`, modules: ['agent'], claims: { agent: ['wide'] }, at })),
  );
});

type Answer = { status: number; bytes: number; data?: any; errors?: { message: string; extensions?: Record<string, unknown> }[] };

/** An operation over HTTP, with the status and the size of what came back. */
async function ask(query: string, variables?: Record<string, unknown>): Promise<Answer> {
  const response = await fetch(gw.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const text = await response.text();
  return { status: response.status, bytes: text.length, ...(JSON.parse(text) as object) };
}

const LOOP = 'seats { holders { machine { holdings { seat { holders { machine { holdings { seat { holders { module } } } } } } } } } }';
/** The issue's query: depth 11, under the depth limit, eight times under aliases. */
const EIGHT_LOOPS = `{ ${Array.from({ length: 8 }, (_, i) => `a${i}: ${LOOP}`).join(' ')} }`;

describe('a query is costed with the size of every list it asks for, before it runs', () => {
  test('seats, holders and holdings nested three times over, eight times, is refused before any statement, naming the list and the limit', async () => {
    const { count, result } = await gw.statementsOf(() => ask(EIGHT_LOOPS));
    expect(count).toBe(0);
    expect(result.data).toBeUndefined();
    expect(result.bytes).toBeLessThan(2_000);
    expect(result.errors).toHaveLength(1);
    const [error] = result.errors!;
    expect(error!.extensions).toMatchObject({ code: 'TOO_LARGE', list: 'Seat.holders', limit: QUERY_LIMITS.cost });
    expect(error!.message).toMatch(/Seat\.holders/);
    expect(error!.message).toMatch(/cost limit of 50,000/);
    expect(error!.message).not.toMatch(/Syntax Error/);
  }, 60_000);

  test('over graphql-ws, the same query is that operation’s error, with the same code', async () => {
    const client = await RawWsClient.connect(gw.url);
    client.subscribe('loops', EIGHT_LOOPS);
    await client.until(() => client.errors.some((e) => e.id === 'loops'), 10_000, 'an error for the costly operation');
    const [error] = client.errors.find((e) => e.id === 'loops')!.payload as { message: string; extensions?: Record<string, unknown> }[];
    expect(error!.extensions).toMatchObject({ code: 'TOO_LARGE', list: 'Seat.holders' });
    await client.close();
  });

  test('one honest nested read of the seat held 120 times (seats, holders, machines and their holdings) is answered whole', async () => {
    const answer = await ask('{ seats { name aliases holders { module derived machine { name state modules holdings { seat { name aliases } } } } } }');
    expect(answer.errors).toBeUndefined();
    expect(answer.data.seats.find((s: { name: string }) => s.name === 'wide').holders).toHaveLength(CLAIMERS);
  });

  test('a page of a thousand machines with their holdings is answered', async () => {
    const answer = await ask('query($n: Int) { machinesConnection(first: $n) { edges { node { name holdings { seat { name } module } } } } }', { n: 1000 });
    expect(answer.errors).toBeUndefined();
    expect(answer.data.machinesConnection.edges).toHaveLength(CLAIMERS);
  });
});

describe('a page asked too large is refused naming the argument, as INVALID, never a syntax or cost error', () => {
  test.each([
    ['machinesConnection(first: 5000)', '{ machinesConnection(first: 5000) { edges { node { name } } } }', undefined, 'first'],
    ['seatsConnection(last: 1001)', '{ seatsConnection(last: 1001) { edges { node { name } } } }', undefined, 'last'],
    ['holdingsConnection(first: $n), n = 100000', 'query($n: Int) { holdingsConnection(first: $n) { edges { node { module } } } }', { n: 100_000 }, 'first'],
    ['plans(first: 2000)', '{ plans(first: 2000) { id } }', undefined, 'first'],
  ])('%s', async (_what, query, variables, argument) => {
    const answer = await ask(query, variables);
    expect(answer.data).toBeUndefined();
    expect(answer.errors).toHaveLength(1);
    expect(answer.errors![0]).toMatchObject({ extensions: { code: 'INVALID', field: argument } });
    expect(answer.errors![0]!.message).toMatch(new RegExp(`^${argument} is \\d+ on \\w+: at most 1000 a page`));
    expect(JSON.stringify(answer)).not.toMatch(/Syntax Error|Cost limit|TOO_LARGE/);
  });
});

/** Every operation the dashboard and meshctl send: their files and the persisted manifests codegen writes. */
function knownOperations(): [string, string][] {
  const documents: [string, string][] = [];
  for (const dir of ['dashboard/src/operations', 'src/cli/operations']) {
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.graphql'))) documents.push([`${dir}/${file}`, readFileSync(`${dir}/${file}`, 'utf8')]);
  }
  for (const manifest of ['src/cli/generated/persisted-documents.json', 'dashboard/src/generated/persisted-documents.json']) {
    for (const [hash, text] of Object.entries(JSON.parse(readFileSync(manifest, 'utf8')) as Record<string, string>))
      documents.push([`${manifest} ${hash}`, text]);
  }
  return documents.flatMap(([where, text]) => {
    const document = parse(text);
    return document.definitions.flatMap((d) => (d.kind === Kind.OPERATION_DEFINITION ? [[`${where} ${d.name?.value}`, text] as [string, string]] : []));
  });
}

test('every operation of the dashboard, meshctl and the persisted manifests is within the cost limit', () => {
  const operations = knownOperations();
  expect(operations.length).toBeGreaterThan(40);
  const refused = operations.flatMap(([where, text]) => {
    const name = where.split(' ').at(-1);
    const refusal = costRefusal(schema, parse(text), name, {}, QUERY_LIMITS.cost);
    return refusal ? [`${where}: ${refusal.message}`] : [];
  });
  expect(refused).toEqual([]);
});

test('fragments spread ten times over forty levels are costed in a moment, each counted once and multiplied where spread', () => {
  const levels = 40;
  const fragments = Array.from({ length: levels }, (_, i) => `fragment F${i + 1} on Seat { ${`...F${i} `.repeat(10)}}`).join(' ');
  const document = parse(`{ seats { ...F${levels} } } fragment F0 on Seat { holders { module } } ${fragments}`);
  const started = performance.now();
  const refusal = costRefusal(schema, document, undefined, {}, QUERY_LIMITS.cost);
  expect(performance.now() - started).toBeLessThan(100);
  expect(refusal?.extensions).toMatchObject({ code: 'TOO_LARGE', list: 'Seat.holders' });
});

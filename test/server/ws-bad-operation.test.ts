import { describe, expect, test } from 'vitest';
import { useGateway } from '../fixtures/gateway.js';
import { RawWsClient } from '../fixtures/ws-client.js';

const { gw } = useGateway('wsbad');

const deep = (n: number) => `{ seats { ${'holders { seat { '.repeat(n)}name${' } }'.repeat(n)} } }`;
const BAD: [string, string, RegExp][] = [
  ['too deep', deep(8), /depth limit of 12 exceeded/],
  ['with too many directives', `subscription { ticks(count: 1) ${'@include(if: true) '.repeat(60)} }`, /Directives limit of 50 exceeded/],
  ['with too many aliases', `{ ${Array.from({ length: 40 }, (_, i) => `a${i}: seats { name }`).join(' ')} }`, /Aliases limit of 30 exceeded/],
  // Seats, their holders, their machines' holdings and those seats' holders: lists nested four deep.
  ['too costly', '{ seats { holders { machine { holdings { seat { holders { module } } } } } } }', /over the cost limit of 50,000/],
  ['a list literal nested 2,000 deep', `{ seat(name: ${'['.repeat(2_000)}"x"${']'.repeat(2_000)}) { name } }`, /nests brackets more than 64 deep/],
  ['not GraphQL', '{ seats { ', /Syntax Error: Expected Name/],
];

describe('one bad operation is answered with an error message; the socket and its other subscriptions go on', () => {
  test.each(BAD)('a document %s', async (_what, query, message) => {
    const client = await RawWsClient.connect(gw.url);
    client.subscribe('live', 'subscription { ticks(count: 1000, everyMs: 20) }');
    await client.until(() => client.of('live').length >= 1, 5_000, 'a first tick');
    client.subscribe('bad', query);
    await client.until(() => client.errors.some((e) => e.id === 'bad'), 5_000, 'an error for the bad operation');
    const [error] = client.errors.find((e) => e.id === 'bad')!.payload as { message: string; extensions?: { code?: string } }[];
    expect(error!.message).toMatch(message);
    expect(error!.message).not.toMatch(/RangeError|Maximum call stack/);
    expect(error).not.toHaveProperty('extensions.http');
    const seen = client.of('live').length;
    await client.until(() => client.of('live').length >= seen + 3, 5_000, 'ticks after the error');
    expect(client.socket.readyState).toBe(client.socket.OPEN);
    client.subscribe('after', '{ __typename }');
    await client.until(() => client.completed.has('after'), 5_000, 'a later operation');
    expect(client.of('after')[0]!.payload).toEqual({ data: { __typename: 'Query' } });
    await client.close();
  });
});

import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { OPERATION_NAMES_MAX, operationNameLabels } from '../../src/server/operation-metrics.js';
import { useGateway } from '../fixtures/gateway.js';
import { eventually, wsSubscribe } from '../fixtures/live.js';

const { gw: gateway } = useGateway('opmetrics');

const scrape = async () => (await fetch(`${new URL(gateway.url).origin}/metrics`)).text();
/** The value of the one sample of `name` whose labels are exactly `labels` (order aside). */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-z_:]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    delete got.replica;
    if (JSON.stringify(Object.entries(got).sort()) === JSON.stringify(Object.entries(labels).sort())) return Number(m[3]);
  }
  return undefined;
}

test('/metrics counts each GraphQL operation by name and type, with its errors and a duration histogram', async () => {
  for (let i = 0; i < 3; i++) expect((await gateway.gql('query SeatNames { seats { name } }')).errors).toBeUndefined();
  expect((await gateway.gql('query Broken { seats { noSuchField } }')).errors?.length).toBeGreaterThan(0);
  expect((await gateway.gql('{ seats { name } }')).errors).toBeUndefined();
  // Refused as data (a typed error), not as a GraphQL error: the operation ran and is counted.
  const refused = await gateway.gql('mutation Rename { renameSeat(from: "no-such-seat", to: "other-seat", why: "metrics test") { __typename } }');
  expect(refused.errors).toBeUndefined();
  expect(refused.data.renameSeat.__typename).toBe('NotFoundError');

  const text = await scrape();
  expect(sample(text, 'mesh_graphql_operations_total', { operation: 'SeatNames', type: 'query' })).toBe(3);
  expect(sample(text, 'mesh_graphql_operation_errors_total', { operation: 'SeatNames', type: 'query' })).toBe(0);
  expect(sample(text, 'mesh_graphql_operation_seconds_count', { operation: 'SeatNames', type: 'query' })).toBe(3);
  expect(sample(text, 'mesh_graphql_operation_seconds_bucket', { operation: 'SeatNames', type: 'query', le: '+Inf' })).toBe(3);
  // A document refused by validation is an operation that failed.
  expect(sample(text, 'mesh_graphql_operations_total', { operation: 'Broken', type: 'query' })).toBe(1);
  expect(sample(text, 'mesh_graphql_operation_errors_total', { operation: 'Broken', type: 'query' })).toBe(1);
  // An operation without a name is one label.
  expect(sample(text, 'mesh_graphql_operations_total', { operation: 'anonymous', type: 'query' })).toBe(1);
  expect(sample(text, 'mesh_graphql_operations_total', { operation: 'Rename', type: 'mutation' })).toBe(1);
});

test('a live status subscription counts each execution the fan-out runs for it, under its name', async () => {
  const live = wsSubscribe(gateway.url, 'subscription LiveSeq { status { seq } }');
  try {
    await live.atLeast(1, 20_000);
    const count = await eventually(
      async () => sample(await scrape(), 'mesh_graphql_operations_total', { operation: 'LiveSeq', type: 'subscription' }),
      'LiveSeq counted',
      20_000,
      100,
    );
    expect(count).toBeGreaterThanOrEqual(1);
  } finally {
    live.close();
  }
});

test(`past ${OPERATION_NAMES_MAX} distinct operation names, every new name is counted as "other"`, async () => {
  const names = Array.from({ length: OPERATION_NAMES_MAX + 20 }, (_, i) => `Generated${i}`);
  for (const name of names) await gateway.gql(`query ${name} { seats { name } }`);
  const text = await scrape();
  const series = new Set([...text.matchAll(/^mesh_graphql_operations_total\{[^}]*operation="([^"]+)"/gm)].map((m) => m[1]));
  expect(series.size).toBeLessThanOrEqual(OPERATION_NAMES_MAX + 2); // the names, `anonymous` and `other`
  expect(series.has('other')).toBe(true);
  expect(sample(text, 'mesh_graphql_operations_total', { operation: 'Generated0', type: 'query' })).toBe(1);
  // The names known before stay themselves, and so do meshctl's (the persisted operations') met only now.
  await gateway.gql('query SeatNames { seats { name } }');
  await gateway.gql('query Seats { seats { name } }');
  const after = await scrape();
  expect(sample(after, 'mesh_graphql_operations_total', { operation: 'SeatNames', type: 'query' })).toBe(4);
  expect(sample(after, 'mesh_graphql_operations_total', { operation: 'Seats', type: 'query' })).toBe(1);
});

test('the label of a name: itself, then "other" once the bound is reached; no name is "anonymous"', () => {
  const labelOf = operationNameLabels([], 2);
  expect([labelOf('A'), labelOf('B'), labelOf('C'), labelOf('A'), labelOf(undefined), labelOf('')]).toEqual(['A', 'B', 'other', 'A', 'anonymous', 'anonymous']);
  expect(labelOf('x'.repeat(500))).toBe('other');
  // A persisted operation's name is kept however many came first.
  const withKnown = operationNameLabels(['Status'], 1);
  expect([withKnown('A'), withKnown('B'), withKnown('Status')]).toEqual(['A', 'other', 'Status']);
});

test('the Grafana dashboard has panels for operations a second, errors and p99 time by operation', () => {
  const dashboard = JSON.parse(readFileSync('docs/grafana-dashboard.json', 'utf8')) as { panels: { title: string; targets?: { expr: string }[] }[] };
  const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ title: p.title, expr: t.expr })));
  const using = (metric: string) => exprs.filter((e) => e.expr.includes(metric) && e.expr.includes('operation'));
  expect(using('mesh_graphql_operations_total')).not.toHaveLength(0);
  expect(using('mesh_graphql_operation_errors_total')).not.toHaveLength(0);
  expect(using('mesh_graphql_operation_seconds_bucket')[0]?.expr).toContain('histogram_quantile(0.99');
});

import { expect, test } from 'vitest';
import { useGateway } from '../fixtures/gateway.js';
import { anAgent, eventually } from '../fixtures/live.js';
import type { TestGateway } from '../fixtures/services.js';

const READER = { name: 'scraper', scopes: ['read' as const], token: 'scrape-token-0123456789' };
const { gw: open, env } = useGateway('metrics');
// A second gateway in the same process (of another controller, so the news is all the first's): each has its own registry.
const { gw: guarded } = useGateway('metrics_tokens', { tokens: [READER], env: { MESH_REPLICA: 'guarded' } });

const origin = (g: TestGateway) => new URL(g.url).origin;
const scrape = async (g: TestGateway, headers: Record<string, string> = {}) => {
  const response = await fetch(`${origin(g)}/metrics`, { headers });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
};
/** The value of one sample (`name{labels} value`), summed over the samples whose labels include `labels`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let total: number | undefined;
  for (const line of text.split('\n')) {
    const m = /^([a-z_:]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    if (!Object.entries(labels).every(([k, v]) => (m[2] ?? '').includes(`${k}="${v}"`))) continue;
    total = (total ?? 0) + Number(m[3]);
  }
  return total;
}

test('/metrics answers Prometheus text counting compositions, news ok and malformed, machines by state, status-cache hits, requests and process metrics', async () => {
  const agent = await anAgent();
  try {
    agent.heartbeat(env.subjects, 'metrics-m1', { site: 'eu-1', modules: ['broker'] });
    agent.nc.publish(`${env.subjects}.news.machine.metrics-m2`, 'not json at all');
    await agent.nc.flush();
  } finally {
    await agent.close();
  }
  await eventually(async () => sample((await scrape(open)).text, 'mesh_machines', { state: 'UP' }) === 1, 'the machine counted UP', 15_000, 100);
  for (let i = 0; i < 3; i++) await open.gql('{ status { seq machines { name } } }');

  const { status, type, text } = await scrape(open);
  expect(status).toBe(200);
  expect(type).toContain('text/plain');
  expect(sample(text, 'mesh_compositions_total')).toBeGreaterThanOrEqual(1);
  expect(sample(text, 'mesh_compose_seconds_count')).toBeGreaterThanOrEqual(1);
  expect(sample(text, 'mesh_composition_items', { list: 'machines' })).toBe(1);
  expect(sample(text, 'mesh_news_ingested_total')).toBeGreaterThanOrEqual(1);
  await eventually(async () => sample((await scrape(open)).text, 'mesh_news_malformed_total') === 1, 'the malformed news counted');
  expect(sample(text, 'mesh_status_query_cache_hits_total')).toBeGreaterThanOrEqual(2);
  expect(sample(text, 'mesh_status_query_cache_misses_total')).toBeGreaterThanOrEqual(1);
  // Answers from the status cache are requests too.
  expect(sample(text, 'mesh_http_requests_total', { method: 'POST', status: '200' })).toBeGreaterThanOrEqual(3);
  expect(sample(text, 'mesh_serving_lease')).toBe(1); // the one gateway, which composed: it serves
  expect(sample(text, 'mesh_nats_connected')).toBe(1);
  expect(sample(text, 'mesh_store_connected')).toBe(1);
  expect(sample(text, 'mesh_calls', { state: 'RUNNING', door: 'GRAPHQL' })).toBe(0);
  expect(sample(text, 'mesh_process_resident_memory_bytes')).toBeGreaterThan(0);
  expect(text).toContain(`replica="${open.config.replica}"`);
});

test('with tokens configured /metrics needs a token of the read scope: 401 without one, 200 with one', async () => {
  const refused = await scrape(guarded);
  expect(refused.status).toBe(401);
  expect(refused.text).toContain('Authorization');
  expect((await scrape(guarded, { authorization: 'Bearer wrong-token' })).status).toBe(401);
  const allowed = await scrape(guarded, { authorization: `Bearer ${READER.token}` });
  expect(allowed.status).toBe(200);
  expect(allowed.text).toContain('replica="guarded"');
  expect(allowed.text).toContain('mesh_compositions_heard_total');
});

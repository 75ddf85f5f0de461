import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, expect, test } from 'vitest';
import WebSocket from 'ws';
import { useGateway } from '../../fixtures/gateway.js';
import type { TokenFixture } from '../../fixtures/services.js';

// Walks docs/access.md's table of every door against every scope (issue 20): each cell is probed
// on a gateway with a tokens file and a NATS users file, as the page says.

const COLUMNS = ['none', 'read', 'act', 'admin'] as const;
type Column = (typeof COLUMNS)[number];
const CALLERS: Record<Exclude<Column, 'none'>, TokenFixture> = {
  read: { name: 'reader', scopes: ['read'], token: 'token-of-reader-table' },
  act: { name: 'actor', scopes: ['read', 'act'], token: 'token-of-actor-table' },
  admin: { name: 'chief', scopes: ['read', 'act', 'admin'], token: 'token-of-chief-table' },
};

let usersDir: string;
let usersFile: string;
beforeAll(() => {
  usersDir = mkdtempSync(join(tmpdir(), 'mesh-door-table-'));
  usersFile = join(usersDir, 'users.json');
  writeFileSync(usersFile, JSON.stringify({ users: Object.values(CALLERS).map(({ name, scopes }) => ({ name, scopes })) }));
});
afterAll(() => rmSync(usersDir, { recursive: true, force: true }));
const { gw, env } = useGateway('door_table', { tokens: Object.values(CALLERS), env: () => ({ MESH_NATS_USERS_FILE: usersFile }) });
let nc: NatsConnection;
beforeAll(async () => {
  nc = await connect({ servers: env.env.NATS_URL });
});
afterAll(async () => {
  await nc?.close();
});

const authOf = (column: Column): Record<string, string> => (column === 'none' ? {} : { authorization: `Bearer ${CALLERS[column].token}` });
const base = () => gw.url.replace(/\/graphql$/, '');
/** The NATS user a column stands for: one the users file does not list for "none". */
const natsUser = (column: Column) => (column === 'none' ? 'stranger' : CALLERS[column].name);

/** A mutation's answer: "no" when refused for scope (FORBIDDEN as data) or by HTTP (401), else "yes". */
async function mutation(column: Column, field: string, text: string): Promise<string> {
  const response = await fetch(gw.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...authOf(column) },
    body: JSON.stringify({ query: `mutation { ${text} { __typename ... on Error { code } } }` }),
  });
  if (response.status === 401) return 'no';
  const body = (await response.json()) as any;
  return body.data[field].code === 'FORBIDDEN' ? 'no' : 'yes';
}

/** A NATS request's answer: "no" when refused FORBIDDEN, else "yes". */
async function nats(subject: string, body: object): Promise<string> {
  const reply = (await nc.request(`${env.subjects}.seat.${env.controller}.${subject}`, JSON.stringify(body), { timeout: 10_000 })).json<any>();
  return reply.ok === false && reply.error.code === 'FORBIDDEN' ? 'no' : 'yes';
}

/** Over graphql-ws: "no" when the socket is refused (4403) or the operation FORBIDDEN, else "yes". */
function overWs(column: Column, query: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const client = createClient({
      url: gw.url.replace(/^http/, 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: authOf(column).authorization ? { Authorization: authOf(column).authorization } : {},
      retryAttempts: 0,
      on: { closed: (event) => (event as { code: number }).code === 4403 && resolve('no') },
    });
    client.subscribe(
      { query },
      {
        next: (result: any) => {
          const data = result.data && Object.values(result.data)[0];
          resolve((data as { code?: string } | undefined)?.code === 'FORBIDDEN' ? 'no' : 'yes');
          void client.dispose();
        },
        error: (error) => (String(JSON.stringify(error)).includes('4403') ? resolve('no') : reject(error)),
        complete: () => void client.dispose(),
      },
    );
  });
}

const PROBES: Record<string, (column: Column) => Promise<string>> = {
  'HTTP | a query': async (column) => {
    const response = await fetch(gw.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...authOf(column) },
      body: '{"query":"{ seats { name } }"}',
    });
    return response.status === 200 ? 'yes' : 'no';
  },
  'HTTP | an acting verb': (column) => mutation(column, 'stopPlan', 'stopPlan(id: "no-such-plan", why: "probe")'),
  'HTTP | an admin verb': (column) => mutation(column, 'retireSeat', 'retireSeat(seat: "no-such-seat", why: "probe")'),
  'HTTP | an admin verb through callVerb': async (column) => {
    const response = await fetch(gw.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...authOf(column) },
      body: JSON.stringify({
        query: `mutation($args: JSON) { callVerb(seat: "${env.controller}", verb: "retireSeat", args: $args) {
          __typename ... on Error { code } ... on MutationCallVerbSuccess { data { errorCode } } } }`,
        variables: { args: { seat: 'no-such-seat', why: 'probe' } },
      }),
    });
    if (response.status === 401) return 'no';
    const answer = ((await response.json()) as any).data.callVerb;
    return answer.code === 'FORBIDDEN' || answer.data?.errorCode === 'FORBIDDEN' ? 'no' : 'yes';
  },
  'SSE | a subscription': async (column) => {
    const response = await fetch(gw.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...authOf(column) },
      body: JSON.stringify({ query: 'subscription { ticks(count: 1) }' }),
    });
    const text = await response.text();
    return response.status === 200 && text.includes('"ticks":1') ? 'yes' : 'no';
  },
  'graphql-ws | a subscription': (column) => overWs(column, 'subscription { ticks(count: 1) }'),
  'graphql-ws | an acting verb': (column) => overWs(column, 'mutation { stopPlan(id: "no-such-plan", why: "probe") { __typename ... on Error { code } } }'),
  'NATS named | a reading verb': (column) => nats(`status.${natsUser(column)}`, {}),
  'NATS named | an acting verb': (column) => nats(`stopPlan.${natsUser(column)}`, { id: 'no-such-plan', why: 'probe' }),
  'NATS named | an admin verb': (column) => nats(`retireSeat.${natsUser(column)}`, { seat: 'no-such-seat', why: 'probe' }),
  'NATS unnamed | a reading verb': () => nats('status', {}),
  'NATS unnamed | call or calls': async () =>
    (await nats('call', { id: '0000000000000000000' })) === 'no' && (await nats('calls', {})) === 'no' ? 'no' : 'yes',
  'NATS unnamed | an acting verb': () => nats('stopPlan', { id: 'no-such-plan', why: 'probe' }),
  '/metrics | a scrape': async (column) => ((await fetch(`${base()}/metrics`, { headers: authOf(column) })).status === 200 ? 'yes' : 'no'),
  '/ready | readiness': async (column) => {
    const body = await (await fetch(`${base()}/ready`, { headers: authOf(column) })).json();
    return Object.keys(body).join(',') === 'ready' ? 'ready only' : 'checks' in body ? 'details' : JSON.stringify(body);
  },
  '/ | the dashboard': async (column) => ((await fetch(`${base()}/`, { headers: authOf(column) })).status === 200 ? 'yes' : 'no'),
  'GraphiQL | the page': async (column) => {
    const response = await fetch(gw.url, { headers: { accept: 'text/html', ...authOf(column) } });
    return response.status === 200 && (await response.text()).includes('graphiql') ? 'yes' : 'no';
  },
};

/** The rows of the table between `<!-- door-table -->` markers in docs/access.md. */
function doorTable(): { door: string; probe: string; cells: Record<Column, string> }[] {
  const page = readFileSync(fileURLToPath(new URL('../../../docs/access.md', import.meta.url)), 'utf8');
  const table = page.split('<!-- door-table -->')[1]?.split('<!-- /door-table -->')[0] ?? '';
  const rows = table
    .trim()
    .split('\n')
    .slice(2)
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
  return rows.map(([door, probe, ...cells]) => ({
    door: door!,
    probe: probe!,
    cells: Object.fromEntries(COLUMNS.map((c, i) => [c, cells[i]!])) as Record<Column, string>,
  }));
}

test('docs/access.md lists every door: HTTP, SSE, graphql-ws, NATS named and unnamed, /metrics, /ready, / and GraphiQL', () => {
  const doors = new Set(doorTable().map((row) => row.door));
  expect([...doors]).toEqual(['HTTP', 'SSE', 'graphql-ws', 'NATS named', 'NATS unnamed', '/metrics', '/ready', '/', 'GraphiQL']);
});

test('each cell of the door table is what the gateway does', async () => {
  const seen: string[] = [];
  const wrong: string[] = [];
  for (const row of doorTable()) {
    const probe = PROBES[`${row.door} | ${row.probe}`];
    expect(probe, `a probe for "${row.door} | ${row.probe}"`).toBeDefined();
    for (const column of COLUMNS) {
      const expected = row.cells[column].replace(/\s*\(.*\)$/, '');
      if (expected === '—') continue;
      const actual = await probe!(column);
      seen.push(`${row.door} | ${row.probe} | ${column}`);
      if (actual !== expected) wrong.push(`${row.door} | ${row.probe} | ${column}: the table says ${expected}, the gateway ${actual}`);
    }
  }
  expect(wrong).toEqual([]);
  expect(seen.length).toBeGreaterThanOrEqual(50);
}, 120_000);

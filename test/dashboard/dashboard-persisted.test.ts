import { createClient } from 'graphql-ws';
import { expect, test } from 'vitest';
import WebSocket from 'ws';
import * as dashboard from '../../dashboard/src/generated/graphql.js';
import { loadPersistedOperations } from '../../src/server/persisted.js';
import { useGateway } from '../fixtures/gateway.js';

// The dashboard's operations are in the manifest codegen writes (codegen.ts), so the page works on a
// gateway that answers persisted operations only (MESH_PERSISTED_ONLY=1): it sends their text.

/** Every operation the page sends: the generated documents of dashboard/src/operations/ (fragments aside). */
const operations = Object.entries(dashboard)
  .filter(([name]) => name.endsWith('Document'))
  .map(([name, document]) => ({ name, text: String(document) }));

const { gw } = useGateway('dashpersisted', { env: { MESH_PERSISTED_ONLY: '1' } });

test('every operation the dashboard sends is in the persisted manifest', () => {
  expect(operations.map((o) => o.name)).toContain('DashboardDocument');
  const only = loadPersistedOperations(true);
  for (const { name, text } of operations) expect(() => only.documentFor({ query: text }), name).not.toThrow();
});

test('on a MESH_PERSISTED_ONLY gateway the dashboard is answered: its queries by HTTP, its status subscription whole first', async () => {
  const post = async (document: { toString(): string }, variables: Record<string, unknown> = {}) => {
    const response = await fetch(gw.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ query: String(document), variables }),
    });
    return (await response.json()) as { data?: Record<string, unknown>; errors?: unknown[] };
  };
  for (const document of [
    dashboard.DashboardCountsDocument,
    dashboard.DashboardDurationsDocument,
    dashboard.DashboardPlansDocument,
    dashboard.DashboardCallsDocument,
  ]) {
    const answer = await post(document);
    expect(answer.errors).toBeUndefined();
    expect(Object.keys(answer.data ?? {}).length, 'the fields the document asks for').toBeGreaterThan(0);
  }

  const client = createClient({ url: gw.url.replace(/^http/, 'ws'), webSocketImpl: WebSocket, retryAttempts: 0 });
  try {
    const first = await new Promise<dashboard.DashboardSubscription['statusChanges']>((resolve, reject) => {
      const stop = client.subscribe<dashboard.DashboardSubscription>(
        { query: String(dashboard.DashboardDocument), variables: {} },
        {
          next: (result) => {
            if (result.errors) return reject(new Error(JSON.stringify(result.errors)));
            stop();
            resolve(result.data!.statusChanges);
          },
          error: (error) => reject(Array.isArray(error) ? new Error(JSON.stringify(error)) : error),
          complete: () => undefined,
        },
      );
    });
    expect(first.full?.seq).toBe(first.seq);
    expect(first.delta).toBeNull();
  } finally {
    await client.dispose();
  }
}, 60_000);

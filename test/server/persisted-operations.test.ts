import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { ConfigError, loadConfig } from '../../src/config.js';
import { MESHCTL_BUNDLE } from '../fixtures/meshctl.js';
import { startTestGateway, type TestEnv, type TestGateway, testEnv } from '../fixtures/services.js';

// MESH_PERSISTED_ONLY=1 answers only the operations of codegen's manifest (by hash, or by their text).

const manifest = JSON.parse(readFileSync('src/cli/generated/persisted-documents.json', 'utf8')) as Record<string, string>;
const [repeatedCausesHash] = Object.entries(manifest).find(([, document]) => document.startsWith('query RepeatedCauses')) ?? [];
const AD_HOC = '{ seats { name } }';

let env: TestEnv;
beforeAll(async () => {
  env = await testEnv('persisted');
}, 60_000);
afterAll(async () => {
  await env?.cleanup();
});

const post = async (gw: TestGateway, body: unknown, accept = 'application/json') => {
  const response = await fetch(gw.url, { method: 'POST', headers: { 'content-type': 'application/json', accept }, body: JSON.stringify(body) });
  return { status: response.status, text: await response.text() };
};

/** One operation over graphql-ws: its results, or the errors of its `error` message. */
function overWs(
  gw: TestGateway,
  payload: { query: string; extensions?: Record<string, unknown> },
): Promise<{ data?: unknown; errors?: { extensions?: { code?: string } }[] }> {
  const client = createClient({ url: gw.url.replace(/^http/, 'ws'), webSocketImpl: WebSocket, retryAttempts: 0 });
  return new Promise((resolve, reject) => {
    let last: { data?: unknown } = {};
    client.subscribe(payload, {
      next: (result) => (last = result as never),
      error: (error) => {
        void client.dispose();
        if (Array.isArray(error)) resolve({ errors: error });
        else reject(error);
      },
      complete: () => {
        void client.dispose();
        resolve(last);
      },
    });
  });
}

function meshctl(url: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MESHCTL_BUNDLE, ...args],
      { env: { ...process.env, MESH_URL: url, MESH_TOKEN: '' }, timeout: 30_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

test('MESH_PERSISTED_ONLY takes 1 or 0 and refuses anything else, naming the variable', () => {
  expect(loadConfig({ MESH_PERSISTED_ONLY: '1' }).persistedOnly).toBe(true);
  expect(loadConfig({ MESH_PERSISTED_ONLY: '0' }).persistedOnly).toBe(false);
  expect(loadConfig({}).persistedOnly).toBe(false);
  expect(() => loadConfig({ MESH_PERSISTED_ONLY: 'yes please' })).toThrow(ConfigError);
  expect(() => loadConfig({ MESH_PERSISTED_ONLY: 'yes please' })).toThrow(/MESH_PERSISTED_ONLY/);
});

test('codegen wrote a manifest of meshctl operations keyed by sha256', () => {
  expect(repeatedCausesHash).toMatch(/^sha256:[0-9a-f]{64}$/);
  expect(Object.keys(manifest).length).toBeGreaterThan(10);
});

describe('with MESH_PERSISTED_ONLY=1', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ ...env.env, MESH_PERSISTED_ONLY: '1' });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
  });

  test('a manifest operation runs by its hash: documentId, Apollo persistedQuery, and over graphql-ws', async () => {
    const byId = await post(gw, { documentId: repeatedCausesHash });
    expect(byId.status).toBe(200);
    expect(JSON.parse(byId.text)).toEqual({ data: { repeatedCauses: [] } });
    const apollo = await post(gw, { extensions: { persistedQuery: { version: 1, sha256Hash: repeatedCausesHash!.slice('sha256:'.length) } } });
    expect(JSON.parse(apollo.text)).toEqual({ data: { repeatedCauses: [] } });
    expect(await overWs(gw, { query: '', extensions: { persistedQuery: { version: 1, sha256Hash: repeatedCausesHash } } })).toEqual({
      data: { repeatedCauses: [] },
    });
  });

  test('the full text of a manifest operation is accepted, whatever its whitespace', async () => {
    const text = manifest[repeatedCausesHash!]!.replace(/ \{ /g, ' {\n  ');
    expect(JSON.parse((await post(gw, { query: text })).text)).toEqual({ data: { repeatedCauses: [] } });
  });

  test('meshctl works: it sends full documents, all in the manifest', async () => {
    const run = await meshctl(gw.url, ['--json', 'status']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toHaveProperty('status');
  });

  test('an ad-hoc query is refused PERSISTED_QUERY_ONLY over HTTP, SSE and graphql-ws', async () => {
    const http = await post(gw, { query: AD_HOC });
    expect(http.status).toBe(400);
    expect(JSON.parse(http.text).errors[0]).toMatchObject({
      message: expect.stringMatching(/persisted operations only/),
      extensions: { code: 'PERSISTED_QUERY_ONLY' },
    });
    const sse = await post(gw, { query: 'subscription { ticks(count: 1) }' }, 'text/event-stream');
    expect(sse.text).toContain('PERSISTED_QUERY_ONLY');
    expect(sse.text).not.toContain('"ticks"');
    const ws = await overWs(gw, { query: 'subscription { ticks(count: 1) }' });
    expect(ws.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_ONLY');
  });

  test('an unknown hash is refused PERSISTED_QUERY_NOT_FOUND', async () => {
    const response = await post(gw, { documentId: `sha256:${'0'.repeat(64)}` });
    expect(JSON.parse(response.text).errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  });
});

describe('without MESH_PERSISTED_ONLY', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(env.env);
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
  });

  test('an ad-hoc query works, and a manifest hash works too', async () => {
    const adHoc = await post(gw, { query: AD_HOC });
    expect(adHoc.status).toBe(200);
    expect(JSON.parse(adHoc.text).data.seats.length).toBeGreaterThan(0);
    expect(JSON.parse((await post(gw, { documentId: repeatedCausesHash })).text)).toEqual({ data: { repeatedCauses: [] } });
    expect(await overWs(gw, { query: 'subscription { ticks(count: 1, everyMs: 10) }' })).toEqual({ data: { ticks: 1 } });
  });
});

import { afterAll, beforeAll, expect, test } from 'vitest';
import { type ChildGateway, spawnGateway } from '../fixtures/child.js';
import { anAgent, eventually } from '../fixtures/live.js';
import { type PrivatePostgres, startPrivatePostgres } from '../fixtures/postgres.js';
import { type TestEnv, testEnv } from '../fixtures/services.js';

// The gateway runs as a process of its own on a PostgreSQL of this file's own, which the tests stop
// and start: the shared server is never touched, and "the process is alive" is a real process.
let env: TestEnv;
let pg: PrivatePostgres;
let agent: Awaited<ReturnType<typeof anAgent>>;
const children: ChildGateway[] = [];

beforeAll(async () => {
  env = await testEnv('outage');
  pg = await startPrivatePostgres();
  agent = await anAgent();
}, 60_000);
afterAll(async () => {
  for (const child of children) await child.kill();
  await agent?.close();
  pg?.remove();
  await env?.cleanup();
});

const gatewayEnv = () => ({ ...env.env, DATABASE_URL: pg.url });
const alive = (gw: ChildGateway) => gw.child.exitCode === null && gw.child.signalCode === null;

const machines = (gw: ChildGateway) => gw.gql(`{ machines { name heartbeats } }`);
const status = (gw: ChildGateway) => gw.gql(`{ status { seq machines { name } } }`);

test('with the store stopped the gateway stays up: reads and mutations answer UNAVAILABLE, status keeps the last composition; once it is back everything works again', async () => {
  const gw = await spawnGateway(gatewayEnv());
  children.push(gw);
  agent.heartbeat(env.subjects, 'out-1', { modules: ['broker'] });
  await eventually(async () => (await status(gw)).data?.status.machines.some((m: { name: string }) => m.name === 'out-1'), 'a composition with out-1');
  const before = (await status(gw)).data.status.seq as number;

  pg.stop();
  const read = await machines(gw);
  expect(read.data).toBeNull();
  expect(read.errors?.[0]).toMatchObject({ message: 'the store is unavailable', extensions: { code: 'UNAVAILABLE' } });

  const act = await gw.gql(`mutation { forgetMachine(machine: "out-1", why: "testing an outage") { __typename } }`);
  expect(act.errors?.[0]).toMatchObject({ message: 'the store is unavailable: nothing was done', extensions: { code: 'UNAVAILABLE' } });
  // The call is kept (on the bus), as failed for that reason, not as an internal error.
  const failed = await eventually(
    async () => (await gw.gql(`{ calls(verb: "forgetMachine") { edges { node { state errorCode error } } } }`)).data?.calls.edges[0]?.node,
    'the call',
  );
  expect(failed).toMatchObject({ state: 'FAILED', errorCode: 'UNAVAILABLE', error: 'the store is unavailable: nothing was done' });

  // News keeps coming and the minute goes by; the status keeps answering from memory.
  // The marker: the gateway tried to write the news and left it in the stream, to read again (logged).
  const leftInStream = () =>
    gw
      .output()
      .split('\n')
      .filter((l) => l.includes('news is kept in the stream and read again')).length;
  const leftBefore = leftInStream();
  agent.heartbeat(env.subjects, 'out-1', { modules: ['broker'] });
  await eventually(() => leftInStream() > leftBefore, 'the news left in the stream, to be read again', 20_000);
  expect(alive(gw)).toBe(true);
  const kept = await status(gw);
  expect(kept.errors).toBeUndefined();
  expect(kept.data.status.seq).toBeGreaterThanOrEqual(before);
  expect(kept.data.status.machines.map((m: { name: string }) => m.name)).toContain('out-1');
  expect(gw.output()).not.toContain("Unhandled 'error' event");

  pg.start();
  await eventually(async () => (await machines(gw)).data?.machines, 'reads to work again', 30_000, 200);
  const acted = await gw.gql(`mutation { recordHandAct(act: "rebooted", target: "out-1", why: "after the outage") { __typename } }`);
  expect(acted.errors).toBeUndefined();
  // A new composition comes by itself, without a restart.
  await eventually(async () => ((await status(gw)).data?.status.seq ?? 0) > kept.data.status.seq, 'a new composition after the outage', 30_000, 200);
  expect(alive(gw)).toBe(true);
  // The outage was logged at warn, never as a server fault (level 50, with a stack).
  const faults = gw
    .output()
    .split('\n')
    .filter((line) => line.includes('"level":50'));
  expect(faults).toEqual([]);
  expect(gw.output()).toMatch(/"level":40[^\n]*the store is unavailable/);
}, 90_000);

test('a gateway started while the store is stopped waits for it, logging each wait with the next delay, and serves once it starts', async () => {
  pg.stop();
  const WAIT_LINE = 'the store is unavailable: waiting before migrating';
  let twoWaits: () => void = () => {};
  const waited = new Promise<void>((resolve) => {
    twoWaits = resolve;
  });
  // The store starts again once the gateway has logged two waits (a loaded machine takes seconds to boot a child).
  const starting = spawnGateway(gatewayEnv(), 60_000, (log) => {
    if (log.split(WAIT_LINE).length > 2) twoWaits();
  });
  await Promise.race([waited, starting.then(() => undefined)]);
  pg.start();
  const gw = await starting;
  children.push(gw);
  const waits = gw
    .output()
    .split('\n')
    .filter((line) => line.includes(WAIT_LINE))
    .map((line) => JSON.parse(line).nextDelayMs);
  expect(waits.length).toBeGreaterThanOrEqual(2);
  expect(waits.slice(0, 2)).toEqual([500, 1_000]);
  const read = await machines(gw);
  expect(read.errors).toBeUndefined();
  expect(read.data.machines.map((m: { name: string }) => m.name)).toContain('out-1');
}, 90_000);

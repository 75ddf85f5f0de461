import { afterAll, beforeAll, expect, test } from 'vitest';
import { useGateway } from '../../fixtures/gateway.js';
import { anAgent, eventually } from '../../fixtures/live.js';

// Heartbeats every 0.2 s: LATE after 0.3 s of silence, SILENT after 1.2 s.
const { gw, env } = useGateway('machine_history', { env: () => ({ MESH_HEARTBEAT_S: '0.2' }) });
let agent: Awaited<ReturnType<typeof anAgent>>;

const HISTORY = `query ($name: String!, $since: DateTime, $until: DateTime) {
  machineHistory(name: $name, since: $since, until: $until) {
    __typename
    ... on QueryMachineHistorySuccess { data { seq at state site modules } }
    ... on InvalidError { message field }
  }
}`;

beforeAll(async () => {
  agent = await anAgent();
  await eventually(() => gw.mesh.status.current(), 'the first composition');
});
afterAll(async () => {
  await agent?.close();
});

const stateOf = (name: string) => gw.mesh.status.current()?.machines.find((m) => m.name === name)?.state;

test('machineHistory lists a machine going LATE, SILENT and back UP, with when each happened, and nothing between', async () => {
  const since = new Date();
  agent.heartbeat(env.subjects, 'h-1', { site: 'eu-1', modules: ['broker'] });
  await eventually(() => stateOf('h-1') === 'UP', 'h-1 UP');
  await eventually(() => stateOf('h-1') === 'LATE', 'h-1 LATE', 5_000);
  await eventually(() => stateOf('h-1') === 'SILENT', 'h-1 SILENT', 5_000);
  agent.heartbeat(env.subjects, 'h-1', { site: 'eu-2', modules: ['broker', 'agent'] });
  await eventually(() => stateOf('h-1') === 'UP', 'h-1 UP again', 5_000);

  const answer = await gw.gql(HISTORY, { name: 'h-1', since: since.toISOString() });
  expect(answer.errors).toBeUndefined();
  const changes = answer.data.machineHistory.data as { seq: number; at: string; state: string | null; site: string | null; modules: string[] }[];
  // The first entry is the machine as it was at `since`: not yet heard.
  expect(changes.map((c) => [c.state, c.site, c.modules])).toEqual([
    [null, null, []],
    ['UP', 'eu-1', ['broker']],
    ['LATE', 'eu-1', ['broker']],
    ['SILENT', 'eu-1', ['broker']],
    ['UP', 'eu-2', ['agent', 'broker']],
  ]);
  const instants = changes.map((c) => Date.parse(c.at));
  expect(instants).toEqual([...instants].sort((a, b) => a - b));
  expect(changes.map((c) => c.seq)).toEqual([...changes.map((c) => c.seq)].sort((a, b) => a - b));
  // LATE about 1.5 intervals after the beat, SILENT about 6.
  expect(instants[3] - instants[2]).toBeGreaterThan(500);

  // A window that ends before it went LATE holds only what came before.
  const early = await gw.gql(HISTORY, { name: 'h-1', since: since.toISOString(), until: new Date(instants[2] - 1).toISOString() });
  expect(early.data.machineHistory.data.map((c: { state: string | null }) => c.state)).toEqual([null, 'UP']);
});

test('machineHistory refuses a bad name or a window that ends before it starts, as typed errors', async () => {
  const badName = await gw.gql(HISTORY, { name: 'no spaces' });
  expect(badName.data.machineHistory).toMatchObject({ __typename: 'InvalidError', field: 'name' });
  const backwards = await gw.gql(HISTORY, { name: 'h-1', since: '2026-12-01T10:00:00Z', until: '2026-12-01T09:00:00Z' });
  expect(backwards.data.machineHistory).toMatchObject({ __typename: 'InvalidError', field: 'since' });
  const unknown = await gw.gql(HISTORY, { name: 'never-heard' });
  // One entry, the machine as it was at the start: absent, with no state; nothing changes after it.
  expect(unknown.data.machineHistory.data.map((c: { state: string | null }) => c.state)).toEqual([null]);
});

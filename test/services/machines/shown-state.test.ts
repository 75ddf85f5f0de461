import { expect, test } from 'vitest';
import type { Judging } from '../../../src/services/machines/machines.js';
import { recordHeartbeats } from '../../../src/services/machines/machines.js';
import { STATE_SCAN_CHUNK } from '../../../src/services/machines/pages.js';
import { type Shown, shownMachine, stateAsShown } from '../../../src/services/machines/shown.js';
import { ingestBatch } from '../../../src/services/news/batch.js';
import { judgeNews } from '../../../src/services/news/wire.js';
import { useGateway } from '../../fixtures/gateway.js';
import { eventually } from '../../fixtures/live.js';

// Issue 37: a beat that changes nothing stored writes nothing, so the store holds a checkpoint of
// last-heard up to MESH_CHECKPOINT_S old (300 s here: none is written by itself during a test). A
// machine beating every 5 s is judged by its memory, as `status` shows it, by every reader: the
// state filters of `machinesConnection` and `machines`, `Machine.state`, `lastHeardAt`.
// 10 s heartbeats: LATE past 15 s of heard news without a beat of the machine's own, SILENT past 60 s.
const HEARTBEAT_S = 10;
const { gw, env } = useGateway('shown-state', { env: { MESH_HEARTBEAT_S: String(HEARTBEAT_S), MESH_CHECKPOINT_S: '300' } });

const beat = (machine: string, heardAtMs: number) => {
  const news = judgeNews(
    env.subjects,
    `${env.subjects}.news.machine.${machine}`,
    JSON.stringify({ kind: 'heartbeat', site: 'eu-1', modules: ['agent'] }),
    new Date(heardAtMs),
  );
  if (news.type !== 'heartbeat') throw new Error(`not a heartbeat: ${JSON.stringify(news)}`);
  return news;
};
const storedLastHeard = async (machine: string) =>
  new Date((await gw.mesh.db.selectFrom('machine').select('last_heard_at').where('name', '=', machine).executeTakeFirstOrThrow()).last_heard_at).getTime();

interface Node {
  name: string;
  state: string;
  lastHeardAt: string;
}
const NODE = 'name state lastHeardAt';
const READERS = `{
  status { machines { ${NODE} } }
  up: machinesConnection(state: UP) { edges { node { ${NODE} } } totalCount }
  late: machinesConnection(state: LATE) { edges { node { ${NODE} } } totalCount }
  silent: machinesConnection(state: SILENT) { edges { node { ${NODE} } } totalCount }
  every: machinesConnection { edges { node { ${NODE} } } }
  upList: machines(state: UP) { ${NODE} }
  silentList: machines(state: SILENT) { ${NODE} }
  machine(name: "steady-1") { ${NODE} }
}`;
const nodes = (connection: { edges: { node: Node }[] }) => connection.edges.map((e) => e.node);

test('a machine beating past the SILENT threshold of its stored checkpoint is listed UP, never SILENT, with the lastHeardAt status shows', async () => {
  const t0 = Date.now() - 70_000;
  // quiet-1 was heard once, 70 s ago: SILENT by any reckoning. steady-1 first beat then too (stored
  // at once), and has beaten every 5 s since: beats that change nothing, kept in memory only.
  await ingestBatch(gw.mesh, [beat('quiet-1', t0), beat('steady-1', t0)]);
  for (let at = t0 + 5_000; at < Date.now() - 5_000; at += 5_000) await ingestBatch(gw.mesh, [beat('steady-1', at)]);
  const last = Date.now();
  await ingestBatch(gw.mesh, [beat('steady-1', last)]);
  const lastIso = new Date(last).toISOString();
  await eventually(
    () => gw.mesh.status.current()?.machines.find((m) => m.name === 'steady-1' && m.lastHeardAt === lastIso && m.state === 'UP'),
    'steady-1 shown UP, heard at its last beat',
  );

  const { data, errors } = await gw.gql(READERS);
  expect(errors).toBeUndefined();
  const shown = data.status.machines.find((m: Node) => m.name === 'steady-1');
  expect(shown).toEqual({ name: 'steady-1', state: 'UP', lastHeardAt: lastIso });
  expect(nodes(data.silent).map((m) => m.name)).toEqual(['quiet-1']);
  expect(data.silent.totalCount).toBe(1);
  expect(nodes(data.late)).toEqual([]);
  expect(data.late.totalCount).toBe(0);
  expect(nodes(data.up)).toEqual([shown]);
  expect(data.up.totalCount).toBe(1);
  expect(nodes(data.every)).toEqual([{ name: 'quiet-1', state: 'SILENT', lastHeardAt: new Date(t0).toISOString() }, shown]);
  expect(data.upList).toEqual([shown]);
  expect(data.silentList.map((m: Node) => m.name)).toEqual(['quiet-1']);
  expect(data.machine).toEqual(shown);
  // What made it a trap: the store still holds the first beat, 70 s old, past SILENT.
  expect(await storedLastHeard('steady-1')).toBe(t0);
});

test('a machine stored but not yet in any composition is listed by the state its row and memory judge', async () => {
  // Written straight to the store, as no ingest does: no composition was asked for, none shows it.
  await recordHeartbeats(gw.mesh.db, [{ machine: 'unshown-1', site: 'eu-1', modules: [], at: new Date(Date.now() - 30_000) }]);
  expect(gw.mesh.status.current()?.machines.some((m) => m.name === 'unshown-1')).toBe(false);
  const { data, errors } = await gw.gql(
    '{ late: machinesConnection(state: LATE, nameStartsWith: "unshown") { edges { node { name state } } totalCount } up: machinesConnection(state: UP, nameStartsWith: "unshown") { totalCount } }',
  );
  expect(errors).toBeUndefined();
  expect(data.late).toEqual({ edges: [{ node: { name: 'unshown-1', state: 'LATE' } }], totalCount: 1 });
  expect(data.up.totalCount).toBe(0);
});

test('pages of one state follow their cursors forwards and backwards across the statements a state is sought in', async () => {
  // 2,400 machines whose checkpoints are all past SILENT, all but every 300th heard since in memory:
  // SQL leaves every one, memory picks the 8 SILENT, paged 3 at a time past STATE_SCAN_CHUNK names.
  const now = Date.now();
  const names = Array.from({ length: 2_400 }, (_, i) => `paged-${String(i).padStart(4, '0')}`);
  await recordHeartbeats(
    gw.mesh.db,
    names.map((machine) => ({ machine, site: 'eu-2', modules: [], at: new Date(now - 90_000) })),
  );
  for (const [i, machine] of names.entries()) if (i % 300) gw.mesh.hearing.machines.note(machine, now, now);
  const silent = names.filter((_, i) => i % 300 === 0);
  expect(names.length).toBeGreaterThan(STATE_SCAN_CHUNK);
  const PAGE = 'edges { node { name state } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }';
  type Page = { edges: { node: Node }[]; pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string; endCursor: string } };
  const page = async (args: string, cursor: string | null): Promise<Page> => {
    const { data, errors } = await gw.gql(`query($cursor: String) { machinesConnection(state: SILENT, site: "eu-2", ${args}) { ${PAGE} } }`, { cursor });
    expect(errors).toBeUndefined();
    return data.machinesConnection;
  };
  const forwards: Node[] = [];
  for (let after: string | null = null; ; ) {
    const got = await page('first: 3, after: $cursor', after);
    forwards.push(...got.edges.map((e) => e.node));
    if (!got.pageInfo.hasNextPage) break;
    after = got.pageInfo.endCursor;
  }
  expect(forwards.map((m) => m.name)).toEqual(silent);
  expect(forwards.every((m) => m.state === 'SILENT')).toBe(true);
  const backwards: string[] = [];
  for (let before: string | null = null; ; ) {
    const got = await page('last: 3, before: $cursor', before);
    backwards.unshift(...got.edges.map((e) => e.node.name));
    if (!got.pageInfo.hasPreviousPage) break;
    before = got.pageInfo.startCursor;
  }
  expect(backwards).toEqual(silent);
  const { data } = await gw.gql('{ machinesConnection(state: SILENT, site: "eu-2") { totalCount } }');
  expect(data.machinesConnection.totalCount).toBe(8);
});

test('a machine shown LATE or SILENT stays so for the same last-heard, whatever a deaf span learned later says; news from it lifts it', () => {
  const heardMs = Date.parse('2026-12-03T10:00:00.000Z');
  const shown: Shown = {
    composedAt: new Date(heardMs + 70_000).toISOString(),
    machines: ['a-1', 'm-1', 'z-1'].map((name) => ({ name, state: 'SILENT' as const, lastHeardAt: new Date(heardMs).toISOString() })),
  };
  expect(shownMachine(shown, 'm-1')?.name).toBe('m-1');
  expect(shownMachine(shown, 'm-0')).toBeUndefined();
  // 10 s beats: 70 s after its last beat, of which the gateway could not hear 60 s: judged UP alone.
  const judging: Judging = { heardUntilMs: heardMs + 70_000, heartbeatSeconds: 10, deaf: [{ fromMs: heardMs + 5_000, toMs: heardMs + 65_000 }] };
  expect(stateAsShown({ name: 'm-1', lastHeardAt: new Date(heardMs) }, judging, undefined)).toBe('UP');
  expect(stateAsShown({ name: 'm-1', lastHeardAt: new Date(heardMs) }, judging, shown)).toBe('SILENT');
  expect(stateAsShown({ name: 'm-1', lastHeardAt: new Date(heardMs + 69_000) }, judging, shown)).toBe('UP');
});

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byName } from '../../src/kernel/names.js';
import { recordHeartbeats } from '../../src/services/machines/machines.js';
import { defineSeat } from '../../src/services/seats/define.js';
import { renameSeat } from '../../src/services/seats/rename.js';
import { startTestGateway, type TestEnv, type TestGateway, testEnv, uniqueName } from '../fixtures/services.js';

// One name order everywhere (issue 36): code-unit order, the order of `byName`, in every list a
// client reads, on a database whose own collation orders names otherwise. ICU `en-US` ignores
// case and punctuation first: it lists `_x -y 9z A-1 a1 alpha b_1 Beta Web-1 Zed`, where code
// units give `-y 9z A-1 Beta Web-1 Zed _x a1 alpha b_1`.
const NAMES = ['Zed', 'a1', 'Web-1', '_x', 'b_1', '9z', 'A-1', 'alpha', '-y', 'Beta'];
/** The modules of every machine: Node's order and ICU's differ on them too. */
const MODULES = ['b_1', 'Beta', 'a1'];
/** Seats renamed, so that their former names (aliases) sort differently too: `Zed` before `a1` in code units. */
const RENAMED: [string, string][] = [
  ['a1', 'a1-now'],
  ['Zed', 'Zed-now'],
];

const ADMIN_DATABASE_URL = process.env.TEST_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const icuDatabase = uniqueName('t_icu_names').toLowerCase();
let env: TestEnv;
let gw: TestGateway;

beforeAll(async () => {
  await admin((c) => c.query(`create database "${icuDatabase}" template template0 locale_provider icu icu_locale 'en-US'`));
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${icuDatabase}`;
  // Controller and subject names of this file's own (and their cleanup); the gateway migrates the ICU database at its start.
  env = await testEnv('icu_names');
  gw = await startTestGateway({ ...env.env, DATABASE_URL: url.toString() });
  const { db, catalogue } = gw.mesh;
  for (const name of NAMES) await defineSeat(db, catalogue, { name });
  for (const [from, to] of RENAMED) await renameSeat(db, catalogue, from, to);
  await recordHeartbeats(
    db,
    NAMES.map((machine) => ({ machine, site: 'site-1', modules: MODULES, at: new Date() })),
  );
  // Written to the store directly, not heard as news: a full composition is asked, as an acting verb asks it.
  gw.composer.poke('acted');
});

afterAll(async () => {
  await gw?.stop();
  await env?.cleanup();
  await admin((c) => c.query(`drop database if exists "${icuDatabase}" with (force)`));
});

async function read<T>(query: string): Promise<T> {
  const { data, errors } = await gw.gql(query);
  expect(errors).toBeUndefined();
  return data as T;
}

const names = (items: { name: string }[]) => items.map((item) => item.name);
const inCodeUnitOrder = (list: string[]) => [...list].sort(byName);

describe('one name order on a database whose collation is ICU en-US', () => {
  it('the database itself orders these names otherwise', async () => {
    const own = new pg.Client({ connectionString: gw.config.databaseUrl });
    await own.connect();
    try {
      const { rows } = await own.query<{ names: string[] }>('select array_agg(n order by n) as names from unnest($1::text[]) n', [NAMES]);
      expect(rows[0]!.names).not.toEqual(inCodeUnitOrder(NAMES));
    } finally {
      await own.end();
    }
  });

  it('machines, machinesConnection and the composition list machines in code-unit order', async () => {
    const expected = inCodeUnitOrder(NAMES);
    const listed = await read<{ machines: { name: string; modules: string[] }[] }>('{ machines { name modules } }');
    const paged = await read<{ machinesConnection: { edges: { node: { name: string } }[] } }>('{ machinesConnection(first: 100) { edges { node { name } } } }');
    const backwards = await read<{ machinesConnection: { edges: { node: { name: string } }[] } }>(
      '{ machinesConnection(last: 100) { edges { node { name } } } }',
    );
    expect(names(listed.machines)).toEqual(expected);
    expect(names(paged.machinesConnection.edges.map((e) => e.node))).toEqual(expected);
    expect(names(backwards.machinesConnection.edges.map((e) => e.node))).toEqual(expected);
    for (const machine of listed.machines) expect(machine.modules).toEqual(inCodeUnitOrder(MODULES));
    // The composition is made by the composer after the beats were stored: read once it has them all.
    await expect
      .poll(async () => names((await read<{ status: { machines: { name: string }[] } }>('{ status { machines { name } } }')).status.machines), {
        timeout: 15_000,
      })
      .toEqual(expected);
    const { status } = await read<{ status: { machines: { name: string; modules: string[] }[] } }>('{ status { machines { name modules } } }');
    for (const machine of status.machines) expect(machine.modules).toEqual(inCodeUnitOrder(MODULES));
  });

  it('seats, seatsConnection, the composition and aliases list seats in code-unit order', async () => {
    const listed = names((await read<{ seats: { name: string }[] }>('{ seats { name } }')).seats);
    expect(listed).toEqual(inCodeUnitOrder(listed));
    for (const name of [...NAMES.filter((n) => !RENAMED.some(([from]) => from === n)), ...RENAMED.map(([, to]) => to)]) expect(listed).toContain(name);
    const paged = await read<{ seatsConnection: { edges: { node: { name: string } }[] } }>('{ seatsConnection(first: 1000) { edges { node { name } } } }');
    expect(names(paged.seatsConnection.edges.map((e) => e.node))).toEqual(listed);
    await expect
      .poll(async () => names((await read<{ status: { seats: { name: string }[] } }>('{ status { seats { name } } }')).status.seats), { timeout: 15_000 })
      .toEqual(listed);
    const aliases = (await read<{ aliases: { alias: string }[] }>('{ aliases { alias } }')).aliases.map((a) => a.alias);
    expect(aliases).toEqual(inCodeUnitOrder(aliases));
    for (const [from] of RENAMED) expect(aliases).toContain(from);
  });
});

import { beforeAll, describe, expect, test } from 'vitest';
import { NAME_PAGE_MAX } from '../../src/kernel/pages.js';
import { CALLS_PAGE_MAX } from '../../src/services/calls/records.js';
import { HAND_ACTS_PAGE_MAX } from '../../src/services/hand-acts/hand-acts.js';
import { recordHeartbeats } from '../../src/services/machines/machines.js';
import { removeAlias } from '../../src/services/seats/cleanup.js';
import { defineSeat } from '../../src/services/seats/define.js';
import { holdSeat, releaseSeat } from '../../src/services/seats/holdings.js';
import { renameSeat } from '../../src/services/seats/rename.js';
import { useGateway } from '../fixtures/gateway.js';
import { startTestGateway, type TestGateway } from '../fixtures/services.js';

const { gw, env } = useGateway('pages', { env: () => ({ MESH_HEARTBEAT_S: String(HEARTBEAT_S) }) });
const HEARTBEAT_S = 10;

// 300 machines: web-000…web-179 and db-000…db-119 over three sites, heard at ages that make every
// third one UP, LATE or SILENT (10 s heartbeats: LATE past 15 s, SILENT past 60 s); 40 seats,
// s-00…s-39: the even ones held on record by web machines, s-01 claimed by every db machine's
// `store` module (held by derivation), and so is s-39 by its former name, the other odd ones not
// held at all.
beforeAll(async () => {
  const { db, catalogue } = gw.mesh;
  for (let i = 0; i < 40; i++) await defineSeat(db, catalogue, { name: `s-${String(i).padStart(2, '0')}` });
  const now = Date.now();
  const ages = [1_000, 30_000, 600_000];
  const names = [
    ...Array.from({ length: 180 }, (_, i) => `web-${String(i).padStart(3, '0')}`),
    ...Array.from({ length: 120 }, (_, i) => `db-${String(i).padStart(3, '0')}`),
  ];
  await recordHeartbeats(
    db,
    names.map((machine, i) => ({
      machine,
      site: `site-${i % 3}`,
      modules: machine.startsWith('db') ? ['store'] : ['front'],
      claims: machine.startsWith('db') ? { store: ['s-01', 's-39'] } : undefined,
      at: new Date(now - ages[i % 3]!),
    })),
  );
  // s-39 is claimed by a name it no longer has: held by derivation through its alias.
  await renameSeat(db, catalogue, 's-39', 's-39-renamed');
  for (let i = 0; i < 40; i += 2)
    await holdSeat(db, catalogue, { seat: `s-${String(i).padStart(2, '0')}`, machine: `web-${String(i).padStart(3, '0')}`, module: 'front' });
});

interface Page<T> {
  edges: { cursor: string; node: T }[];
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string; endCursor: string };
  totalCount: number;
}

const PAGE = 'edges { cursor node { name } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } totalCount';

async function connection<T = { name: string }>(gateway: TestGateway, field: string, args: Record<string, unknown>, selection = PAGE): Promise<Page<T>> {
  const defs = Object.keys(args).length
    ? `(${Object.keys(args)
        .map((k) => `$${k}: ${TYPES[k]}`)
        .join(', ')})`
    : '';
  const uses = Object.keys(args).length
    ? `(${Object.keys(args)
        .map((k) => `${k}: $${k}`)
        .join(', ')})`
    : '';
  const { data, errors } = await gateway.gql(`query${defs} { ${field}${uses} { ${selection} } }`, args);
  expect(errors).toBeUndefined();
  return data[field];
}

const TYPES: Record<string, string> = {
  first: 'Int',
  last: 'Int',
  after: 'String',
  before: 'String',
  site: 'String',
  state: 'MachineState',
  nameStartsWith: 'String',
  held: 'Boolean',
  seat: 'String',
  machine: 'String',
};

/** Every item of a connection, page after page forwards, and the pages it took. */
async function everyPageForwards(field: string, args: Record<string, unknown>, first: number): Promise<{ names: string[]; pages: number }> {
  const names: string[] = [];
  let after: string | undefined;
  for (let pages = 1; ; pages++) {
    const page = await connection(gw, field, { ...args, first, ...(after ? { after } : {}) });
    names.push(...page.edges.map((e) => e.node.name));
    if (!page.pageInfo.hasNextPage) return { names, pages };
    after = page.pageInfo.endCursor;
  }
}

const plainMachines = async (args: string) => (await gw.gql(`{ machines${args} { name } }`)).data.machines.map((m: { name: string }) => m.name);

describe('machinesConnection', () => {
  test('pages forwards through every machine in name order, as the plain list has them, with the total on each page', async () => {
    const every = await plainMachines('');
    expect(every).toHaveLength(300);
    const { names, pages } = await everyPageForwards('machinesConnection', {}, 70);
    expect(pages).toBe(5);
    expect(names).toEqual(every);
    expect((await connection(gw, 'machinesConnection', { first: 1 })).totalCount).toBe(300);
  });

  test('pages backwards with last and before, ending at the first machine', async () => {
    const every = await plainMachines('');
    const names: string[] = [];
    let before: string | undefined;
    for (;;) {
      const page = await connection(gw, 'machinesConnection', { last: 70, ...(before ? { before } : {}) });
      names.unshift(...page.edges.map((e) => e.node.name));
      if (!page.pageInfo.hasPreviousPage) break;
      before = page.pageInfo.startCursor;
    }
    expect(names).toEqual(every);
  });

  test('filters by name prefix, site and state in SQL as the plain list and Machine.state judge them', async () => {
    const web = await connection(gw, 'machinesConnection', { nameStartsWith: 'web-0', first: 1000 });
    expect(web.edges.map((e) => e.node.name)).toEqual(Array.from({ length: 100 }, (_, i) => `web-${String(i).padStart(3, '0')}`));
    expect(web.totalCount).toBe(100);
    for (const state of ['UP', 'LATE', 'SILENT']) {
      const page = await connection<{ name: string; state: string }>(
        gw,
        'machinesConnection',
        { state, site: 'site-1', first: 1000 },
        'edges { node { name state } } totalCount',
      );
      expect(page.edges.map((e) => e.node.name)).toEqual(await plainMachines(`(state: ${state}, site: "site-1")`));
      expect(page.edges.every((e) => e.node.state === state)).toBe(true);
      expect(page.totalCount).toBe(page.edges.length);
    }
    // Every third machine is of site-1 and all of those were heard 30 s ago: LATE.
    expect((await connection(gw, 'machinesConnection', { state: 'LATE', site: 'site-1' }, 'totalCount')).totalCount).toBe(100);
  });

  test('a cursor names a machine, not an offset: machines added before it do not shift the next page', async () => {
    const first = await connection(gw, 'machinesConnection', { first: 10 });
    const next = await connection(gw, 'machinesConnection', { first: 10, after: first.pageInfo.endCursor });
    await recordHeartbeats(gw.mesh.db, [{ machine: 'aaa-early', site: 'site-0', modules: [], at: new Date() }]);
    try {
      const again = await connection(gw, 'machinesConnection', { first: 10, after: first.pageInfo.endCursor });
      expect(again.edges.map((e) => e.node.name)).toEqual(next.edges.map((e) => e.node.name));
      expect(again.totalCount).toBe(next.totalCount + 1);
    } finally {
      await gw.mesh.db.deleteFrom('machine').where('name', '=', 'aaa-early').execute();
    }
  });

  test('a cursor from one replica gives the same page on another started since', async () => {
    const first = await connection(gw, 'machinesConnection', { first: 25, nameStartsWith: 'db' });
    const here = await connection(gw, 'machinesConnection', { first: 25, nameStartsWith: 'db', after: first.pageInfo.endCursor });
    const other = await startTestGateway({ ...env.env, MESH_HEARTBEAT_S: String(HEARTBEAT_S) });
    try {
      const there = await connection(other, 'machinesConnection', { first: 25, nameStartsWith: 'db', after: first.pageInfo.endCursor });
      expect(there.edges.map((e) => e.node.name)).toEqual(here.edges.map((e) => e.node.name));
      expect(there.edges.map((e) => e.cursor)).toEqual(here.edges.map((e) => e.cursor));
    } finally {
      await other.stop();
    }
  });

  test('a page and the holdings of its machines take a fixed number of statements however large the page', async () => {
    const HOLDINGS = 'edges { node { name holdings { seat { name } module } } } pageInfo { hasNextPage }';
    const small = await gw.statementsOf(() => connection(gw, 'machinesConnection', { first: 5 }, HOLDINGS));
    const large = await gw.statementsOf(() => connection<{ name: string; holdings: unknown[] }>(gw, 'machinesConnection', { first: 300 }, HOLDINGS));
    expect(large.result.edges.flatMap((e) => e.node.holdings).length).toBeGreaterThan(100);
    expect(large.count).toBe(small.count);
    expect(small.count).toBeLessThanOrEqual(3);
  });
});

describe('refusals', () => {
  test(`a page over ${NAME_PAGE_MAX} is an INVALID error naming the limit, not a shorter page`, async () => {
    for (const [field, arg] of [
      ['machinesConnection', 'first'],
      ['seatsConnection', 'last'],
      ['holdingsConnection', 'first'],
    ] as const) {
      const { data, errors } = await gw.gql(`{ ${field}(${arg}: ${NAME_PAGE_MAX + 1}) { totalCount } }`);
      // Refused before it runs (useQueryCost): no data at all, and the argument named.
      expect(data ?? null).toBeNull();
      expect(errors?.[0]?.extensions).toMatchObject({ code: 'INVALID', field: arg });
      expect(errors?.[0]?.message).toContain(`at most ${NAME_PAGE_MAX}`);
    }
    expect((await connection(gw, 'machinesConnection', { first: NAME_PAGE_MAX })).edges).toHaveLength(300);
  });

  test('a page of calls or hand-acts over its maximum is an INVALID error too, never a page cut short', async () => {
    for (const [field, max, what] of [
      ['calls', CALLS_PAGE_MAX, 'calls'],
      ['handActs', HAND_ACTS_PAGE_MAX, 'hand-acts'],
    ] as const) {
      const { data, errors } = await gw.gql(`{ ${field}(first: ${max + 1}) { edges { cursor } } }`);
      expect(data).toBeNull();
      expect(errors?.[0]?.extensions?.code).toBe('INVALID');
      expect(errors?.[0]?.message).toContain(`at most ${max} ${what} a page`);
      const { errors: none } = await gw.gql(`{ ${field}(first: ${max}) { edges { cursor } } }`);
      expect(none).toBeUndefined();
    }
  });

  test('a cursor that is not one, or is another list’s, is an INVALID error', async () => {
    const seatCursor = (await connection(gw, 'seatsConnection', { first: 1 })).pageInfo.endCursor;
    for (const after of ['nonsense', Buffer.from('["machines",1]').toString('base64url'), seatCursor]) {
      const { errors } = await gw.gql('query($after: String) { machinesConnection(after: $after) { totalCount } }', { after });
      expect(errors?.[0]?.extensions?.code).toBe('INVALID');
      expect(errors?.[0]?.message).toContain('not a cursor of machines');
    }
  });

  test('a cursor that decodes to no key of its list (a NUL, a space, a number in a name) is an INVALID error, after or before, never INTERNAL', async () => {
    const cursor = (...parts: unknown[]) => Buffer.from(JSON.stringify(parts)).toString('base64url');
    // The issue's: ["machines","\u0000"], which PostgreSQL could not take.
    expect(cursor('machines', '\u0000')).toBe('WyJtYWNoaW5lcyIsIlx1MDAwMCJd');
    const bad: [string, string][] = [
      ['machinesConnection', cursor('machines', '\u0000')],
      ['machinesConnection', cursor('machines', 'a b')],
      ['machinesConnection', cursor('machines', '')],
      ['seatsConnection', cursor('seats', 'x\u0000')],
      ['holdingsConnection', cursor('holdings', 's', '\u0000', 'm')],
      ['holdingsConnection', cursor('holdings', 's', 'm', 7)],
    ];
    for (const [field, value] of bad) {
      for (const arg of ['after', 'before']) {
        const answer = await gw.gql(`query($c: String) { ${field}(${arg}: $c) { totalCount edges { cursor } } }`, { c: value });
        expect(answer.errors?.[0]?.extensions?.code, `${field}(${arg}: ${value})`).toBe('INVALID');
        expect(answer.errors?.[0]?.message).toContain(`${arg} is not a cursor of`);
      }
    }
  });

  test('a cursor of calls or hand-acts that is no id is an INVALID error naming the argument, never matched as text', async () => {
    for (const field of ['calls', 'handActs']) {
      for (const arg of ['after', 'before']) {
        for (const value of ['WyJtYWNoaW5lcyIsIlx1MDAwMCJd', 'zzzzzzzzzzzzzzzzzzzz', '']) {
          const answer = await gw.gql(`query($c: String) { ${field}(${arg}: $c) { edges { cursor } } }`, { c: value });
          expect(answer.errors?.[0]?.extensions?.code, `${field}(${arg}: ${value})`).toBe('INVALID');
          expect(answer.errors?.[0]?.message).toContain(`${arg} is not a cursor of`);
        }
      }
    }
  });

  test('a name prefix outside the name rule is an INVALID error', async () => {
    const { errors } = await gw.gql(`{ machinesConnection(nameStartsWith: "web%") { totalCount } }`);
    expect(errors?.[0]?.extensions?.code).toBe('INVALID');
    expect(errors?.[0]?.message).toContain('nameStartsWith');
  });
});

describe('seatsConnection and holdingsConnection', () => {
  test('seats page by name and filter by prefix and by being held, on record or derived', async () => {
    const plain = (await gw.gql('{ seats { name holders { derived } } }')).data.seats as { name: string; holders: unknown[] }[];
    const { names } = await everyPageForwards('seatsConnection', {}, 7);
    expect(names).toEqual(plain.map((s) => s.name));
    const held = await connection(gw, 'seatsConnection', { held: true, nameStartsWith: 's-', first: 100 });
    expect(held.edges.map((e) => e.node.name)).toEqual(plain.filter((s) => s.name.startsWith('s-') && s.holders.length > 0).map((s) => s.name));
    expect(held.edges.map((e) => e.node.name)).toEqual(expect.arrayContaining(['s-01', 's-39-renamed']));
    expect(held.totalCount).toBe(22);
    const unheld = await connection(gw, 'seatsConnection', { held: false, nameStartsWith: 's-', first: 100 });
    expect(unheld.totalCount).toBe(18);
    expect(unheld.edges.map((e) => e.node.name)).not.toContain('s-01');
  });

  test('holdings page by seat, machine and module, recorded and derived, as the plain list has them', async () => {
    const plain = (await gw.gql('{ holdings { seat { name } machine { name } module derived } }')).data.holdings as unknown[];
    const SELECTION = 'edges { node { seat { name } machine { name } module derived } } pageInfo { hasNextPage endCursor } totalCount';
    const nodes: unknown[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await connection<unknown>(gw, 'holdingsConnection', { first: 33, ...(after ? { after } : {}) }, SELECTION);
      nodes.push(...page.edges.map((e) => e.node));
      expect(page.totalCount).toBe(plain.length);
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(nodes).toEqual(plain);
    expect(plain.length).toBe(20 + 120 + 120);
    const ofSeat = await connection<unknown>(gw, 'holdingsConnection', { seat: 's-01', first: 50 }, SELECTION);
    expect(ofSeat.totalCount).toBe(120);
    expect(ofSeat.edges).toHaveLength(50);
  });
});

describe('pages follow the claims as they change', () => {
  const SELECTION = 'edges { node { seat { name } machine { name } module derived } } pageInfo { hasNextPage endCursor }';
  async function pagedHoldings(): Promise<unknown[]> {
    const nodes: unknown[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await connection<unknown>(gw, 'holdingsConnection', { first: 100, ...(after ? { after } : {}) }, SELECTION);
      nodes.push(...page.edges.map((e) => e.node));
      if (!page.pageInfo.hasNextPage) return nodes;
      after = page.pageInfo.endCursor;
    }
  }
  /** The pages of holdings and of held seats against the plain lists, which derive holdings from the claims themselves. */
  async function expectPagesAsThePlainLists(): Promise<void> {
    const plain = (await gw.gql('{ holdings { seat { name } machine { name } module derived } }')).data.holdings as unknown[];
    expect(await pagedHoldings()).toEqual(plain);
    expect((await connection(gw, 'holdingsConnection', { first: 1 }, 'totalCount')).totalCount).toBe(plain.length);
    const seats = (await gw.gql('{ seats { name holders { module } } }')).data.seats as { name: string; holders: unknown[] }[];
    const held = await connection(gw, 'seatsConnection', { held: true, first: 1000 });
    expect(held.edges.map((e) => e.node.name)).toEqual(seats.filter((s) => s.holders.length > 0).map((s) => s.name));
    const unheld = await connection(gw, 'seatsConnection', { held: false, first: 1000 });
    expect(unheld.edges.map((e) => e.node.name)).toEqual(seats.filter((s) => s.holders.length === 0).map((s) => s.name));
  }
  const beat = (machine: string, claims: string[] | undefined, modules = ['store']) =>
    recordHeartbeats(gw.mesh.db, [{ machine, site: 'site-0', modules, claims: claims && { store: claims }, at: new Date() }]);

  test('a claim that changes, a module that stops, a seat defined under a name already claimed, an alias removed', async () => {
    const holdersOf = async (seat: string) => (await connection(gw, 'holdingsConnection', { seat, first: 1000 }, SELECTION)).edges.length;
    await beat('db-000', ['s-03']);
    expect(await holdersOf('s-03')).toBe(1);
    await expectPagesAsThePlainLists();
    await beat('db-001', undefined, []);
    expect(await holdersOf('s-01')).toBe(118);
    await expectPagesAsThePlainLists();
    await beat('db-002', ['s-01', 'claimed-first']);
    await defineSeat(gw.mesh.db, gw.mesh.catalogue, { name: 'claimed-first' });
    expect(await holdersOf('claimed-first')).toBe(1);
    await expectPagesAsThePlainLists();
    await removeAlias(gw.mesh.db, gw.mesh.catalogue, 's-39');
    expect(await holdersOf('s-39-renamed')).toBe(0);
    await expectPagesAsThePlainLists();
  });

  test('a seat held on record and released, a module claiming a seat by two names, pages backwards and of one machine', async () => {
    const { db, catalogue } = gw.mesh;
    const holders = async (args: Record<string, unknown>) =>
      (await connection<{ machine: { name: string }; derived: boolean }>(gw, 'holdingsConnection', { ...args, first: 1000 }, SELECTION)).edges.map(
        (e) => `${e.node.machine.name}${e.node.derived ? ' derived' : ''}`,
      );
    // s-01 is held by derivation; held on record it has that one holder, released it is derived again.
    await holdSeat(db, catalogue, { seat: 's-01', machine: 'db-010', module: 'store' });
    expect(await holders({ seat: 's-01' })).toEqual(['db-010']);
    await expectPagesAsThePlainLists();
    await releaseSeat(db, catalogue, { seat: 's-01', machine: 'db-010', module: 'store' });
    expect((await holders({ seat: 's-01' })).every((h) => h.endsWith(' derived'))).toBe(true);
    await expectPagesAsThePlainLists();
    // A seat held on record, renamed: its holdings move by cascade, and it is still held on record.
    await renameSeat(db, catalogue, 's-02', 's-02-renamed');
    expect(await holders({ seat: 's-02-renamed' })).toEqual(['web-002']);
    await expectPagesAsThePlainLists();
    // A module that claims s-05 by its name and by an alias holds it once.
    await renameSeat(db, catalogue, 's-05', 's-05-renamed');
    await beat('db-004', ['s-05', 's-05-renamed']);
    expect(await holders({ seat: 's-05-renamed' })).toEqual(['db-004 derived']);
    await expectPagesAsThePlainLists();
    // Backwards from the end, 7 a page, the same holdings in the same order.
    const plain = (await gw.gql('{ holdings { seat { name } machine { name } module derived } }')).data.holdings as unknown[];
    const backwards: unknown[] = [];
    let before: string | undefined;
    for (;;) {
      const page = await connection<unknown>(
        gw,
        'holdingsConnection',
        { last: 7, ...(before ? { before } : {}) },
        'edges { node { seat { name } machine { name } module derived } } pageInfo { hasPreviousPage startCursor }',
      );
      backwards.unshift(...page.edges.map((e) => e.node));
      if (!(page as unknown as { pageInfo: { hasPreviousPage: boolean } }).pageInfo.hasPreviousPage) break;
      before = page.pageInfo.startCursor;
    }
    expect(backwards).toEqual(plain);
    // Of one machine: its recorded and derived holdings, as the plain list filtered by it.
    for (const machine of ['db-004', 'web-002']) {
      const ofMachine = (await gw.gql('query($m: String) { holdings(machine: $m) { seat { name } machine { name } module derived } }', { m: machine })).data
        .holdings;
      expect(ofMachine.length).toBeGreaterThan(0);
      const paged = await connection<unknown>(gw, 'holdingsConnection', { machine, first: 1 }, SELECTION);
      expect(paged.edges.map((e) => e.node)).toEqual(ofMachine.slice(0, 1));
      const rest = await connection<unknown>(gw, 'holdingsConnection', { machine, first: 1000, after: paged.pageInfo.endCursor }, `${SELECTION} totalCount`);
      expect([...paged.edges, ...rest.edges].map((e) => e.node)).toEqual(ofMachine);
      expect(rest.totalCount).toBe(ofMachine.length);
    }
  });
});

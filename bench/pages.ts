import { randomBytes } from 'node:crypto';
import { cpus, loadavg, totalmem } from 'node:os';
import { type CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { PageRequest } from '../src/kernel/pages.js';
import { recordHeartbeats } from '../src/services/machines/machines.js';
import { countMachines, type MachinePageFilter, machineCursor, pageMachines } from '../src/services/machines/pages.js';
import { compiledCatalogue } from '../src/services/seats/catalogue.js';
import { countHoldings, countSeats, holdingCursor, pageHoldings, pageSeats } from '../src/services/seats/pages.js';
import { migrateToLatest } from '../src/store/migrate.js';
import type { DB } from '../src/store/tables.js';
import { seed } from './compose.js';
import { ADMIN_URL, admin } from './databases.js';

// `npm run bench -- pages`: the Relay connections' reads at 100,000 machines (bench/compose.ts's
// mesh: 20 sites, 20,000 seats, 100,000 holdings on record and 100,000 derived), each the service
// function a connection runs, timed from Node (median of BENCH_ROUNDS), and its statement's plan
// with `EXPLAIN (ANALYZE, BUFFERS)`. BENCH_CASES=holdings runs the cases whose name starts so.
const MACHINES = Number(process.env.BENCH_MACHINES ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 21);
const HEARTBEAT_S = 10;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function run(): Promise<string> {
  const name = `bench_pages_${randomBytes(4).toString('hex')}`;
  await admin(`create database "${name}"`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 2, options: '-c jit=off' });
  // The statements the last call ran, to explain them afterwards with their own parameters.
  let ran: CompiledQuery[] = [];
  const db = new Kysely<DB>({
    dialect: new PostgresDialect({ pool }),
    log: (event) => {
      if (event.level === 'query') ran.push(event.query);
    },
  });
  const lines: string[] = [];
  const out = (line: string) => {
    lines.push(line);
    console.error(line);
  };
  try {
    await migrateToLatest(db);
    const seeding = performance.now();
    await seed(db as never, { machines: MACHINES, seats: MACHINES / 5, recordedPerMachine: 1, compositions: 0, newsRate: 0, newsSeconds: 0 });
    out(
      `seeded ${MACHINES} machines, ${MACHINES / 5} seats, ${MACHINES} holdings on record and ${MACHINES} derived in ${((performance.now() - seeding) / 1000).toFixed(1)} s`,
    );
    const catalogue = compiledCatalogue('bench-controller', []);
    const middle = machineCursor({ name: `m-${Math.floor(MACHINES / 2)}` } as never);
    const queueMiddle = holdingCursor({ seat: 'queue', machine: `m-${Math.floor(MACHINES / 2)}`, module: 'broker' } as never);
    const page = (limit: number, more: Partial<PageRequest> = {}): PageRequest => ({ limit: limit + 1, ...more });
    const up: MachinePageFilter = { state: { is: 'UP', judging: { heardUntilMs: Date.now(), heartbeatSeconds: HEARTBEAT_S } } };
    const silent: MachinePageFilter = { state: { is: 'SILENT', judging: { heardUntilMs: Date.now(), heartbeatSeconds: HEARTBEAT_S } } };
    const cases: [string, () => Promise<unknown>][] = [
      ['machines, first 100', () => pageMachines(db, {}, page(100))],
      ['machines, first 1,000', () => pageMachines(db, {}, page(1000))],
      ['machines, first 100 after the middle', () => pageMachines(db, {}, page(100, { after: middle }))],
      ['machines, last 100', () => pageMachines(db, {}, page(100, { inverted: true }))],
      ['machines, nameStartsWith "m-9999", first 100', () => pageMachines(db, { nameStartsWith: 'm-9999' }, page(100))],
      ['machines, site "site-7", first 100 after the middle', () => pageMachines(db, { site: 'site-7' }, page(100, { after: middle }))],
      ['machines, state UP, first 100', () => pageMachines(db, up, page(100))],
      ['machines, state SILENT, first 100', () => pageMachines(db, silent, page(100))],
      ['machines, totalCount (all)', () => countMachines(db, {})],
      ['machines, totalCount site "site-7"', () => countMachines(db, { site: 'site-7' })],
      ['machines, totalCount nameStartsWith "m-9999"', () => countMachines(db, { nameStartsWith: 'm-9999' })],
      ['seats, first 100', () => pageSeats(db, catalogue, {}, page(100))],
      ['seats, held false, first 100', () => pageSeats(db, catalogue, { held: false }, page(100))],
      ['seats, totalCount (all)', () => countSeats(db, {})],
      ['holdings, seat "seat-77", first 100', () => pageHoldings(db, { seats: ['seat-77'] }, page(100))],
      ['holdings, machine "m-4242", first 100', () => pageHoldings(db, { machines: ['m-4242'] }, page(100))],
      ['holdings, all, first 100', () => pageHoldings(db, {}, page(100))],
      ['holdings, all, last 100', () => pageHoldings(db, {}, page(100, { inverted: true }))],
      [
        'holdings, seat "queue" (derived 100,000 times), first 100 after the middle',
        () => pageHoldings(db, { seats: ['queue'] }, page(100, { after: queueMiddle })),
      ],
      ['holdings, totalCount seat "seat-77"', () => countHoldings(db, { seats: ['seat-77'] })],
      ['holdings, totalCount (all)', () => countHoldings(db, {})],
    ];
    out('');
    out('| read | answered | median wall (Node, pg and PostgreSQL) | PostgreSQL execution (EXPLAIN ANALYZE) |');
    out('|---|---|---|---|');
    const plans: string[] = [];
    const only = process.env.BENCH_CASES;
    for (const [what, read] of cases.filter(([what]) => !only || what.startsWith(only))) {
      const walls: number[] = [];
      let answered: unknown;
      for (let i = 0; i < ROUNDS; i++) {
        ran = [];
        const start = performance.now();
        answered = await read();
        walls.push(performance.now() - start);
      }
      const statement = ran.at(-1)!;
      const explained = await pool.query(`explain (analyze, buffers) ${statement.sql}`, statement.parameters as unknown[]);
      const plan = explained.rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n');
      const execution = /Execution Time: ([\d.]+) ms/.exec(plan)?.[1];
      const size = Array.isArray(answered) ? `${answered.length} items` : String(answered);
      out(`| ${what} | ${size} | ${median(walls).toFixed(2)} ms | ${execution} ms |`);
      plans.push(`### ${what}\n\n\`\`\`\n${plan}\n\`\`\``);
    }
    out('');
    await heartbeatWrites(db, out);
    out('');
    out(plans.join('\n\n'));
    out('');
    out(
      `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}; load average at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(', ')}`,
    );
    return lines.join('\n');
  } finally {
    await db.destroy();
    await admin(`drop database if exists "${name}" with (force)`);
  }
}

const HEARTBEAT_BATCH = 1_000;
const CLAIM_TRIGGERS = ['assignment_claims_inserted', 'assignment_claims_updated', 'assignment_claims_deleted'];

/**
 * What keeping the claims by name (migrations/0005_claims_by_name.ts's triggers on assignment) costs the heartbeat's
 * write: batches of 1,000 machines' heartbeats, unchanged or with every tenth machine's modules
 * changing back and forth, with the triggers and without them, alternating, in one run.
 */
async function heartbeatWrites(db: Kysely<DB>, out: (line: string) => void): Promise<void> {
  const batch = (round: number, changing: boolean) =>
    Array.from({ length: HEARTBEAT_BATCH }, (_, k) => {
      const i = (round * 7919 + k * 37) % MACHINES;
      const changes = changing && k % 10 === 0 && round % 2 === 0;
      return {
        machine: `m-${i}`,
        site: `site-${i % 20}`,
        modules: changes ? ['web'] : ['broker', 'web'],
        claims: changes ? ({} as Record<string, string[]>) : { broker: ['queue'] },
        at: new Date(),
      };
    });
  const triggers = (on: boolean) =>
    Promise.all(CLAIM_TRIGGERS.map((t) => sql`alter table assignment ${sql.raw(on ? 'enable' : 'disable')} trigger ${sql.id(t)}`.execute(db)));
  out(`| heartbeats, a batch of ${HEARTBEAT_BATCH.toLocaleString('en')} machines | claims kept by triggers | without the triggers |`);
  out('|---|---|---|');
  for (const changing of [false, true]) {
    const took = { on: [] as number[], off: [] as number[] };
    for (let round = 0; round < 2 * ROUNDS; round++) {
      const on = round % 4 < 2;
      await triggers(on);
      const start = performance.now();
      await recordHeartbeats(db, batch(Math.floor(round / 2) * 2 + (round % 2), changing));
      took[on ? 'on' : 'off'].push(performance.now() - start);
    }
    await triggers(true);
    const what = changing ? 'every tenth machine changing its modules' : 'nothing changed';
    out(`| ${what} | ${median(took.on).toFixed(2)} ms | ${median(took.off).toFixed(2)} ms |`);
  }
}

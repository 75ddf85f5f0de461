import { sql } from 'kysely';
import { afterAll, beforeEach, describe, expect, test } from 'vitest';
import { type Catalogue, compiledCatalogue } from '../../../src/services/seats/catalogue.js';
import { defineSeat } from '../../../src/services/seats/define.js';
import { renameSeat } from '../../../src/services/seats/rename.js';
import { listSeats, seatByName } from '../../../src/services/seats/seats.js';
import { seedSeats } from '../../../src/services/seats/seeding.js';
import type { Verb } from '../../../src/services/verbs/protocol.js';
import type { Store } from '../../../src/store/db.js';
import { freshStore } from '../../fixtures/services.js';

const push: Verb = {
  name: 'push',
  acting: true,
  args: [
    { name: 'seat', type: 'String', required: true },
    { name: 'build', type: 'String', required: true },
    { name: 'behind', type: 'ID', required: false },
    { name: 'why', type: 'String', required: true },
  ],
};
const olderPush: Verb = { name: 'push', acting: true, args: [{ name: 'seat', type: 'String', required: true }] };
const catalogue: Catalogue = compiledCatalogue('ctl', [push]);

let store: Awaited<ReturnType<typeof freshStore>>;
let db: Store;

beforeEach(async () => {
  await store?.close();
  store = await freshStore('seeding');
  db = store.db;
});
afterAll(() => store?.close());

const names = async () => (await listSeats(db, catalogue)).map((s) => s.name);

describe('seeding the default seats', () => {
  test('the first start adds every default and says how many; the next adds none', async () => {
    expect(await seedSeats(db, catalogue)).toEqual({ added: catalogue.seats.size, widened: 0 });
    expect(await names()).toEqual([...catalogue.seats.keys()].sort());
    expect(await seedSeats(db, catalogue)).toEqual({ added: 0, widened: 0 });
  });

  test('seeding never overwrites what an operator changed in a row', async () => {
    await seedSeats(db, catalogue);
    await defineSeat(db, catalogue, { name: 'queue', scope: 'mesh', delivers: 'our own words' });
    await seedSeats(db, catalogue);
    const queue = await seatByName(db, catalogue, 'queue');
    expect(queue.scope).toBe('mesh');
    expect(queue.delivers).toBe('our own words');
  });

  test('seeding never deletes a seat the defaults no longer name', async () => {
    await seedSeats(db, catalogue);
    await defineSeat(db, catalogue, { name: 'retired', scope: 'site' });
    await seedSeats(db, catalogue);
    expect(await names()).toContain('retired');
  });

  test('a default an operator renamed is not brought back under its old name', async () => {
    await seedSeats(db, catalogue);
    await renameSeat(db, catalogue, 'queue', 'queues');
    const report = await seedSeats(db, catalogue);
    expect(report.added).toBe(0);
    expect(await names()).toContain('queues');
    expect(await names()).not.toContain('queue');
  });

  test('a renamed default is still widened under its new name', async () => {
    await seedSeats(db, catalogue);
    await renameSeat(db, catalogue, 'queue', 'queues');
    await defineSeat(db, catalogue, { name: 'queues', protocol: { accepts: [], emits: ['delivered'], serves: [] } });
    await seedSeats(db, catalogue);
    expect((await seatByName(db, catalogue, 'queues')).serves.map((v) => v.name)).toEqual(['depth']);
  });

  test('a present row gains the verbs it lacks and keeps the verbs only it has', async () => {
    await seedSeats(db, catalogue);
    const ownDepth: Verb = { name: 'depth', acting: false, args: [{ name: 'queue', type: 'String', required: false }] };
    const purge: Verb = { name: 'purge', acting: true, args: [] };
    await defineSeat(db, catalogue, { name: 'queue', protocol: { accepts: ['custom'], emits: [], serves: [ownDepth, purge] } });
    const wider = compiledCatalogue('ctl', [push]);
    const queue = wider.seats.get('queue')!;
    (wider.seats as Map<string, typeof queue>).set('queue', { ...queue, serves: [...queue.serves, { name: 'stats', acting: false, args: [] }] });
    expect((await seedSeats(db, wider)).widened).toBe(1);
    const seat = await seatByName(db, wider, 'queue');
    expect(seat.serves).toEqual([ownDepth, purge, { name: 'stats', acting: false, args: [] }]);
    expect(seat.accepts).toEqual(['custom', 'message']);
    expect(seat.emits).toEqual(['delivered']);
  });

  test("the controller's seat takes this binary's definition of the verbs the binary defines", async () => {
    const newer: Verb = { name: 'drain', acting: true, args: [] };
    await defineSeat(db, catalogue, { name: 'ctl', protocol: { accepts: [], emits: [], serves: [olderPush, newer] } });
    await seedSeats(db, catalogue);
    const seat = await seatByName(db, catalogue, 'ctl');
    expect(seat.serves).toEqual([push, newer]);
  });

  test('verbs are compared canonically: the same verb with its keys in another order is not rewritten', async () => {
    await seedSeats(db, catalogue);
    const reordered = JSON.stringify([{ args: push.args.map((a) => ({ required: a.required, type: a.type, name: a.name })), acting: true, name: 'push' }]);
    await sql`update seat set serves = ${reordered}::jsonb where name = 'ctl'`.execute(db);
    expect(await seedSeats(db, catalogue)).toEqual({ added: 0, widened: 0 });
  });

  test('a row whose protocol lists are empty reads as the compiled protocol until seeding fills them', async () => {
    await seedSeats(db, catalogue);
    await sql`update seat set accepts = '[]', emits = '[]', serves = '[]' where name = 'builder'`.execute(db);
    const compiled = catalogue.seats.get('builder')!;
    const read = await seatByName(db, catalogue, 'builder');
    expect({ accepts: read.accepts, emits: read.emits, serves: read.serves }).toEqual({
      accepts: compiled.accepts,
      emits: compiled.emits,
      serves: compiled.serves,
    });
    await seedSeats(db, catalogue);
    const row = await db.selectFrom('seat').select('serves').where('name', '=', 'builder').executeTakeFirstOrThrow();
    expect(row.serves).toEqual(compiled.serves);
  });

  test('two replicas seeding at once add each default exactly once', async () => {
    const [a, b] = await Promise.all([seedSeats(db, catalogue), seedSeats(db, catalogue)]);
    expect(a.added + b.added).toBe(catalogue.seats.size);
    expect(await names()).toHaveLength(catalogue.seats.size);
  });
});

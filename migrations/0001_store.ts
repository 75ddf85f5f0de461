import { type Kysely, sql } from 'kysely';

// The store as DESIGN.md lays it out. Names are the mesh's keys: a seat's or a machine's name is
// its identity, so renames cascade through foreign keys instead of through code.
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and take the store untyped (Kysely's own advice).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('machine')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('site', 'text')
    .addColumn('first_heard_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_heard_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('heartbeats', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('machine_site').on('machine').columns(['site', 'name']).execute();

  await db.schema
    .createTable('assignment')
    .addColumn('machine', 'text', (c) => c.notNull().references('machine.name').onDelete('cascade').onUpdate('cascade'))
    .addColumn('module', 'text', (c) => c.notNull())
    .addColumn('running', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('claims', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('since', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('heard_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('assignment_pk', ['machine', 'module'])
    .execute();

  await db.schema
    .createTable('seat')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('scope', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('delivers', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('decided', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('replicated', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('accepts', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('emits', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('serves', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('seat_alias')
    .addColumn('alias', 'text', (c) => c.primaryKey())
    .addColumn('seat', 'text', (c) => c.notNull().references('seat.name').onDelete('cascade').onUpdate('cascade'))
    .execute();
  await db.schema.createIndex('seat_alias_seat').on('seat_alias').column('seat').execute();

  await db.schema
    .createTable('seat_holding')
    .addColumn('seat', 'text', (c) => c.notNull().references('seat.name').onDelete('cascade').onUpdate('cascade'))
    .addColumn('machine', 'text', (c) => c.notNull())
    .addColumn('module', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('since', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('seat_holding_pk', ['seat', 'machine', 'module'])
    .addForeignKeyConstraint('seat_holding_assignment', ['machine', 'module'], 'assignment', ['machine', 'module'], (c) =>
      c.onDelete('cascade').onUpdate('cascade'),
    )
    .execute();
  await db.schema.createIndex('seat_holding_machine').on('seat_holding').columns(['machine', 'module']).execute();

  await db.schema
    .createTable('duration')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('apply', 'heartbeat_gap', 'plan_tier', 'build')`))
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('seconds', 'double precision', (c) => c.notNull())
    .addColumn('heard_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('duration_kind_heard').on('duration').columns(['kind', 'heard_at']).execute();
  await db.schema.createIndex('duration_heard').on('duration').column('heard_at').execute();

  await db.schema
    .createTable('plan')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('seat', 'text', (c) => c.notNull().references('seat.name').onUpdate('cascade'))
    .addColumn('build', 'text', (c) => c.notNull())
    .addColumn('tiers', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('tier', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('state', 'text', (c) => c.notNull().check(sql`state in ('QUEUED', 'OPEN', 'STOPPED', 'DONE', 'CLOSED')`))
    .addColumn('behind', 'text', (c) => c.references('plan.id'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('opened_at', 'timestamptz')
    .addColumn('tier_started_at', 'timestamptz')
    .addColumn('ended_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('plan_state').on('plan').columns(['state', 'created_at']).execute();
  await db.schema.createIndex('plan_behind').on('plan').column('behind').execute();

  // One row per machine a plan's apply was sent to: what the apply duration and the tier's
  // completion are judged from.
  await db.schema
    .createTable('plan_apply')
    .addColumn('plan', 'text', (c) => c.notNull().references('plan.id').onDelete('cascade'))
    .addColumn('tier', 'integer', (c) => c.notNull())
    .addColumn('machine', 'text', (c) => c.notNull())
    .addColumn('sent_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('reported_at', 'timestamptz')
    .addColumn('ok', 'boolean')
    .addColumn('detail', 'text')
    .addPrimaryKeyConstraint('plan_apply_pk', ['plan', 'machine'])
    .execute();

  // A build's start as the build machine reported it, so its finish can be timed.
  await db.schema
    .createTable('build')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('module', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('started_at', 'timestamptz')
    .addColumn('ended_at', 'timestamptz')
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and take the store untyped (Kysely's own advice).
export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['build', 'plan_apply', 'plan', 'duration', 'seat_holding', 'seat_alias', 'seat', 'assignment', 'machine']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}

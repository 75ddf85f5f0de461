import { type Kysely, sql } from 'kysely';

// Pages of holdings and of seats by `held` at 100,000 machines, without reading every running
// module's claims (docs/BENCHMARKS.md, "Pages of machines, seats and holdings"):
// - `assignment_claim` turns the running modules' claims around: one row per name a running module
//   claims, so a seat's derived holders are one index range in (machine, module) order, and a
//   machine's claims one more.
// - `seat.held_on_record` says a seat has a holding on record, so the seats held by derivation (or
//   not at all) are one partial index in name order instead of a walk of every seat.
// Both are kept by statement triggers, which write only for the rows a statement changed: the
// heartbeat's upsert leaves unchanged assignments unwritten, so a steady mesh's heartbeats pay one
// empty trigger call per statement. Both are derived; the tables they come from stay the truth.
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and take the store untyped (Kysely's own advice).
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table assignment_claim (claim text not null, machine text not null, module text not null)`.execute(db);
  await sql`create unique index assignment_claim_key_c on assignment_claim (claim, machine collate "C", module collate "C")`.execute(db);
  await sql`create index assignment_claim_machine on assignment_claim (machine, module)`.execute(db);
  // A claim list that is not a list of names claims nothing, as `claims ?| names` would have it; it
  // never fails the heartbeat that wrote it.
  await sql`
    create function assignment_claims_of(claims jsonb) returns setof text language sql immutable as $$
      select distinct e.claim
        from jsonb_array_elements(case when jsonb_typeof(claims) = 'array' then claims else '[]'::jsonb end) as x(v)
        cross join lateral (select x.v #>> '{}' as claim) e
       where jsonb_typeof(x.v) = 'string'
    $$`.execute(db);
  await sql`
    create function assignment_claims_follow() returns trigger language plpgsql as $$
    begin
      if tg_op in ('UPDATE', 'DELETE') then
        delete from assignment_claim c using old_rows o where c.machine = o.machine and c.module = o.module;
      end if;
      if tg_op in ('INSERT', 'UPDATE') then
        insert into assignment_claim (claim, machine, module)
        select c.claim, n.machine, n.module from new_rows n cross join lateral assignment_claims_of(n.claims) c(claim)
         where n.running
        on conflict do nothing;
      end if;
      return null;
    end $$`.execute(db);
  await sql`create trigger assignment_claims_inserted after insert on assignment referencing new table as new_rows
            for each statement execute function assignment_claims_follow()`.execute(db);
  await sql`create trigger assignment_claims_updated after update on assignment referencing old table as old_rows new table as new_rows
            for each statement execute function assignment_claims_follow()`.execute(db);
  await sql`create trigger assignment_claims_deleted after delete on assignment referencing old table as old_rows
            for each statement execute function assignment_claims_follow()`.execute(db);
  await sql`insert into assignment_claim (claim, machine, module)
            select c.claim, a.machine, a.module from assignment a cross join lateral assignment_claims_of(a.claims) c(claim)
             where a.running`.execute(db);

  await sql`alter table seat add column held_on_record boolean not null default false`.execute(db);
  // Recounted from seat_holding rather than counted up and down, so a seat's rename (which moves
  // its holdings by cascade after the seat row has moved) leaves it right. An update can move a
  // holding between seats: both ends are recounted.
  await sql`
    create function seat_held_on_record_follow() returns trigger language plpgsql as $$
    declare touched text[];
    begin
      if tg_op = 'INSERT' then touched := array(select seat from new_rows);
      elsif tg_op = 'DELETE' then touched := array(select seat from old_rows);
      else touched := array(select seat from old_rows union select seat from new_rows);
      end if;
      update seat s set held_on_record = exists (select 1 from seat_holding h where h.seat = s.name)
       where s.name = any(touched)
         and s.held_on_record is distinct from exists (select 1 from seat_holding h where h.seat = s.name);
      return null;
    end $$`.execute(db);
  await sql`create trigger seat_holding_inserted after insert on seat_holding referencing new table as new_rows
            for each statement execute function seat_held_on_record_follow()`.execute(db);
  await sql`create trigger seat_holding_deleted after delete on seat_holding referencing old table as old_rows
            for each statement execute function seat_held_on_record_follow()`.execute(db);
  await sql`create trigger seat_holding_updated after update on seat_holding referencing old table as old_rows new table as new_rows
            for each statement execute function seat_held_on_record_follow()`.execute(db);
  await sql`update seat s set held_on_record = true where exists (select 1 from seat_holding h where h.seat = s.name)`.execute(db);
  await sql`create index seat_unrecorded_name_c on seat (name collate "C") where not held_on_record`.execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and take the store untyped (Kysely's own advice).
export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists seat_unrecorded_name_c`.execute(db);
  for (const trigger of ['seat_holding_inserted', 'seat_holding_deleted', 'seat_holding_updated'])
    await sql`drop trigger if exists ${sql.id(trigger)} on seat_holding`.execute(db);
  await sql`drop function if exists seat_held_on_record_follow()`.execute(db);
  await sql`alter table seat drop column if exists held_on_record`.execute(db);
  for (const trigger of ['assignment_claims_inserted', 'assignment_claims_updated', 'assignment_claims_deleted'])
    await sql`drop trigger if exists ${sql.id(trigger)} on assignment`.execute(db);
  await sql`drop function if exists assignment_claims_follow(), assignment_claims_of(jsonb)`.execute(db);
  await sql`drop table if exists assignment_claim`.execute(db);
}

import { sql } from 'kysely';
import { expect, test } from 'vitest';
import { applyReports, type Report } from '../../../src/services/plans/rollout.js';
import { useGateway } from '../../fixtures/gateway.js';
import { DEFINE_SEAT } from '../../fixtures/operations.js';

const { gw } = useGateway('reportsbatch');

/** More reports than PostgreSQL's 65,535 parameters allow at 5 parameters a report (13,107). */
const REPORTS = 20_000;

test(`${REPORTS} reports in one news batch are all written: the batch's size binds no parameter per report`, async () => {
  expect((await gw.gql(DEFINE_SEAT, { input: { name: 'wide' } })).data.defineSeat.__typename).toBe('MutationDefineSeatSuccess');
  const machines = Array.from({ length: REPORTS }, (_, i) => `wide-${i}`);
  await sql`insert into plan (id, seat, build, tiers, tier, state, opened_at, tier_started_at)
            values ('wide-plan', 'wide', 'b-1', ${JSON.stringify([machines])}::jsonb, 0, 'OPEN', now(), now())`.execute(gw.mesh.db);
  await sql`insert into plan_apply (plan, tier, machine) select 'wide-plan', 0, 'wide-' || i from generate_series(0, ${REPORTS - 1}::int) i`.execute(
    gw.mesh.db,
  );
  const at = new Date();
  const reports: Report[] = machines.map((machine) => ({ machine, plan: 'wide-plan', build: 'b-1', ok: true, detail: null, at }));

  const outcome = await applyReports(gw.mesh, reports);

  expect({ matched: outcome.matched, unmatched: outcome.unmatched }).toEqual({ matched: REPORTS, unmatched: 0 });
  const waiting = await sql<{ n: number }>`select count(*)::int as n from plan_apply where plan = 'wide-plan' and reported_at is null`.execute(gw.mesh.db);
  expect(waiting.rows[0]!.n).toBe(0);
  expect((await gw.mesh.db.selectFrom('plan').select('state').where('id', '=', 'wide-plan').executeTakeFirstOrThrow()).state).toBe('DONE');
}, 60_000);

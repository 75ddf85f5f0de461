import { type Command, Option } from 'commander';
import { type CommandContext, type Runner, show, succeeded } from '../context.js';
import {
  ClosePlanDocument,
  PlanChangedDocument,
  type PlanPartsFragment,
  type PlanState,
  PlansDocument,
  PushDocument,
  ResumePlanDocument,
  StopPlanDocument,
} from '../generated/graphql.js';
import { col, record, table } from '../output.js';
import { followLive } from './follow.js';

const PLAN_STATES: readonly PlanState[] = ['QUEUED', 'OPEN', 'STOPPED', 'DONE', 'CLOSED'];
const progress = (p: PlanPartsFragment) => {
  const tier = p.applies.filter((a) => a.tier === p.tier);
  const ok = tier.filter((a) => a.ok === true).length;
  const failed = tier.filter((a) => a.ok === false).length;
  return `tier ${p.tier + 1}/${p.tiers.length}: ${ok} ok, ${failed} failed, ${tier.length - ok - failed} waiting`;
};

const planRecord = (p: PlanPartsFragment) =>
  record([
    ['plan', p.id],
    ['seat', p.seat],
    ['build', p.build],
    ['state', p.state],
    ['progress', progress(p)],
    ['tiers', p.tiers.map((t) => t.join(' '))],
    ['behind', p.behind],
    ['stop reason', p.stopReason],
  ]);

/** Collects repeated `--tiers m1,m2 --tiers m3` into [[m1, m2], [m3]]. */
const tierList = (value: string, previous: string[][] = []) => [...previous, value.split(',').filter(Boolean)];

/**
 * Follows the plan by planChanged (the plan as it is first, then each change of its state, tier or
 * applies, from any replica), a line on stderr each time its progress reads differently, until it
 * is no longer OPEN or QUEUED.
 */
async function follow(ctx: CommandContext, id: string): Promise<void> {
  let said = '';
  await followLive(
    ctx,
    PlanChangedDocument,
    ({ planChanged: plan }, stop) => {
      const line = `${plan.state} ${progress(plan)}${plan.stopReason ? ` — ${plan.stopReason}` : ''}`;
      if (line !== said) process.stderr.write(`${id}: ${line}\n`);
      said = line;
      if (plan.state !== 'OPEN' && plan.state !== 'QUEUED') stop();
    },
    () => ({ id }),
  );
}

export function planCommands(program: Command, run: Runner): void {
  program
    .command('push')
    .description("plans a build's rollout to a seat's holders, tier by tier")
    .argument('<seat>')
    .argument('<build>')
    .requiredOption('--why <why>', 'why, kept in the hand-act log')
    .option('--cause <cause>', 'what made it necessary, as a short label')
    .option('--behind <plan>', 'wait until this plan is DONE or closed')
    .option('--tiers <machines>', 'one tier, machines comma-separated; repeat for each tier', tierList)
    .option('--follow', 'follow the plan until it is DONE, STOPPED or CLOSED, showing its progress')
    .action((seat: string, build: string, o: { why: string; cause?: string; behind?: string; tiers?: string[][]; follow?: boolean }) =>
      run(async (ctx) => {
        const data = await ctx.client.request(PushDocument, { seat, build, why: o.why, cause: o.cause, behind: o.behind, tiers: o.tiers });
        const plan = succeeded(ctx, data, data.push);
        if (!ctx.json) ctx.print(planRecord(plan));
        if (o.follow) await follow(ctx, plan.id);
      }),
    );
  const plans = program
    .command('plans')
    .description('plans newest first, of one state when given')
    .addOption(new Option('--state <state>', 'QUEUED, OPEN, STOPPED, DONE or CLOSED').choices(PLAN_STATES))
    .action((o: { state?: PlanState }) =>
      run(async (ctx) =>
        show(ctx, await ctx.client.request(PlansDocument, { state: o.state }), (d) =>
          table(d.plans, [
            col('plan', (p) => p.id),
            col('seat', (p) => p.seat),
            col('build', (p) => p.build),
            col('state', (p) => p.state),
            col('progress', progress),
            col('stop reason', (p) => p.stopReason),
          ]),
        ),
      ),
    );
  const verb = (name: 'stop' | 'close' | 'resume', description: string, act: (ctx: CommandContext, id: string, why: string) => Promise<PlanPartsFragment>) =>
    plans
      .command(name)
      .description(description)
      .argument('<id>')
      .requiredOption('--why <why>', 'why, kept in the hand-act log')
      .action((id: string, o: { why: string }) =>
        run(async (ctx) => {
          const plan = await act(ctx, id, o.why);
          if (!ctx.json) ctx.print(planRecord(plan));
        }),
      );
  verb('stop', 'halts an OPEN plan', async (ctx, id, why) => {
    const data = await ctx.client.request(StopPlanDocument, { id, why });
    return succeeded(ctx, data, data.stopPlan);
  });
  verb('close', 'ends a plan in any state; plans queued behind it open', async (ctx, id, why) => {
    const data = await ctx.client.request(ClosePlanDocument, { id, why });
    return succeeded(ctx, data, data.closePlan);
  });
  verb('resume', "retries a STOPPED plan's failed machines and goes on", async (ctx, id, why) => {
    const data = await ctx.client.request(ResumePlanDocument, { id, why });
    return succeeded(ctx, data, data.resumePlan);
  });
}

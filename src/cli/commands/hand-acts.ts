import { type Command, Option } from 'commander';
import { type CommandContext, type Runner, show, succeeded } from '../context.js';
import {
  type DurationKind,
  DurationsDocument,
  HandActAddedDocument,
  type HandActPartsFragment,
  HandActsDocument,
  RecordHandActDocument,
  RepeatedCausesDocument,
  ResetConsumerDocument,
} from '../generated/graphql.js';
import { col, record, table } from '../output.js';
import { followLive } from './follow.js';

const DURATION_KINDS: readonly DurationKind[] = ['APPLY', 'HEARTBEAT_GAP', 'PLAN_TIER', 'BUILD'];

const handActTable = (acts: readonly HandActPartsFragment[]) =>
  table(acts, [
    col('at', (a) => a.at),
    col('actor', (a) => a.actor),
    col('act', (a) => a.act),
    col('target', (a) => a.target),
    col('why', (a) => a.why),
    col('cause', (a) => a.cause),
  ]);

const seconds = (n: number | null | undefined) => (n == null ? null : `${Math.round(n * 100) / 100}s`);

/**
 * Follows handActAdded from the newest hand-act listed (nothing recorded meanwhile is missed),
 * a line each (with --json, its data as one line of JSON); of one cause when given.
 */
async function followHandActs(ctx: CommandContext, newest: string | undefined, cause: string | undefined): Promise<void> {
  let after = newest;
  await followLive(
    ctx,
    HandActAddedDocument,
    (data) => {
      const act = data.handActAdded;
      after = act.id;
      if (cause && act.cause !== cause) return;
      if (ctx.json) ctx.print(JSON.stringify(data));
      else ctx.print([act.at, act.actor, act.act, act.target ?? '', act.why, act.cause ? `[${act.cause}]` : ''].join('  ').trimEnd());
    },
    () => (after ? { after } : {}),
  );
}

export function handActCommands(program: Command, run: Runner): void {
  program
    .command('hand-acts')
    .description('the hand-act log, newest first')
    .option('--since <instant>', 'from this ISO 8601 instant')
    .option('--cause <cause>', 'of one cause')
    .option('--follow', 'then each hand-act as it is recorded, on any replica, oldest first (Ctrl-C exits 0)')
    .action((o: { since?: string; cause?: string; follow?: boolean }) =>
      run(async (ctx) => {
        const data = await ctx.client.request(HandActsDocument, { since: o.since, cause: o.cause, first: 100 });
        show(ctx, data, (d) => handActTable(d.handActs.edges.map((e) => e.node)));
        if (o.follow) await followHandActs(ctx, data.handActs.edges[0]?.node.id, o.cause);
      }),
    );
  program
    .command('repeated-causes')
    .description('causes given to more than one hand-act (default: the last seven days)')
    .option('--since <instant>', 'from this ISO 8601 instant')
    .action((o: { since?: string }) =>
      run(async (ctx) =>
        show(ctx, await ctx.client.request(RepeatedCausesDocument, { since: o.since }), (d) =>
          table(d.repeatedCauses, [col('cause', (c) => c.cause), col('count', (c) => c.count), col('first', (c) => c.firstAt), col('last', (c) => c.lastAt)]),
        ),
      ),
    );
  program
    .command('record-hand-act')
    .description('records a repair done by hand outside the mesh, so it leaves a trace')
    .argument('<act>')
    .requiredOption('--why <why>', 'why it was done, in a sentence')
    .option('--target <target>', 'what it was done to')
    .option('--cause <cause>', 'what made it necessary, as a short label')
    .action((act: string, o: { why: string; target?: string; cause?: string }) =>
      run(async (ctx) => {
        const data = await ctx.client.request(RecordHandActDocument, { act, why: o.why, target: o.target, cause: o.cause });
        const done = succeeded(ctx, data, data.recordHandAct);
        if (!ctx.json) ctx.print(record(Object.entries(done)));
      }),
    );
  program
    .command('durations')
    .description('durations as heard, per kind, beside the bound in force')
    .addOption(new Option('--kind <kind>', 'APPLY, HEARTBEAT_GAP, PLAN_TIER or BUILD').choices(DURATION_KINDS))
    .option('--since <instant>', 'from this ISO 8601 instant (default: all kept)')
    .action((o: { kind?: DurationKind; since?: string }) =>
      run(async (ctx) =>
        show(ctx, await ctx.client.request(DurationsDocument, { kind: o.kind, since: o.since }), (d) =>
          table(d.durations, [
            col('kind', (s) => s.kind),
            col('count', (s) => s.count),
            col('p50', (s) => seconds(s.p50)),
            col('p90', (s) => seconds(s.p90)),
            col('p99', (s) => seconds(s.p99)),
            col('max', (s) => seconds(s.max)),
            col('bound', (s) => seconds(s.bound)),
            col('exceeded', (s) => s.exceeded),
          ]),
        ),
      ),
    );
  program
    .command('consumers')
    .description('JetStream consumers')
    .command('reset')
    .description('deletes a durable consumer and creates it again, delivering from the start')
    .argument('<stream>')
    .argument('<consumer>')
    .requiredOption('--why <why>', 'why, kept in the hand-act log')
    .action((stream: string, consumer: string, o: { why: string }) =>
      run(async (ctx) => {
        const data = await ctx.client.request(ResetConsumerDocument, { stream, consumer, why: o.why });
        const reset = succeeded(ctx, data, data.resetConsumer);
        if (!ctx.json) ctx.print(record(Object.entries(reset)));
      }),
    );
}

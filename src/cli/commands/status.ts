import type { Command } from 'commander';
import { BEHIND_SHOWN_S, behindSeconds, type Composition } from '../../services/status/composition.js';
import type { StatusDelta } from '../../services/status/delta/delta.js';
import { applyDelta } from '../../services/status/delta/delta.js';
import { type CommandContext, type Runner, show } from '../context.js';
import { StatusChangesDocument, StatusDocument, type StatusPartsFragment } from '../generated/graphql.js';
import { col, listed, section, table } from '../output.js';

type Summary = Pick<StatusPartsFragment, 'seq' | 'composedAt' | 'heardUntil' | 'machines' | 'unheldSeats' | 'plans' | 'callsRunning' | 'handActsThisWeek'>;

/** A compact summary: machines by site and state, unheld seats, plans with tier progress. */
function summary(status: Summary): string {
  const sites = new Map<string, { UP: number; LATE: number; SILENT: number }>();
  for (const m of status.machines) {
    const site = m.site ?? '(no site)';
    const counts = sites.get(site) ?? { UP: 0, LATE: 0, SILENT: 0 };
    counts[m.state]++;
    sites.set(site, counts);
  }
  const rows = [...sites.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
  const total = status.machines.length;
  const plans = status.plans.map((p) => ({ ...p, progress: `tier ${p.tier + 1} of ${p.tiers.length}` }));
  const behind = behindSeconds({ composedAt: String(status.composedAt), heardUntil: String(status.heardUntil) });
  return [
    `status ${status.seq} composed ${status.composedAt}: ${total} machines, ${status.callsRunning} calls running, ${status.handActsThisWeek} hand-acts this week`,
    ...(behind > BEHIND_SHOWN_S ? [`behind by ${Math.round(behind)} s: news up to ${status.heardUntil} is written, machines shown as then`] : []),
    '',
    section(
      'machines by site',
      table(rows, [col('site', ([s]) => s), col('up', ([, c]) => c.UP), col('late', ([, c]) => c.LATE), col('silent', ([, c]) => c.SILENT)]),
    ),
    '',
    `unheld seats: ${listed(status.unheldSeats)}`,
    '',
    section(
      'plans open',
      table(plans, [
        col('plan', (p) => p.id),
        col('seat', (p) => p.seat),
        col('build', (p) => p.build),
        col('state', (p) => p.state),
        col('progress', (p) => p.progress),
        col('stop reason', (p) => p.stopReason),
      ]),
    ),
  ].join('\n');
}

/** Follows statusChanges, applying deltas, redrawing the summary after each, resuming after a disconnect; Ctrl-C ends it (exit 0). */
async function watch(ctx: CommandContext): Promise<void> {
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  let held: Composition | undefined;
  await ctx.client.subscribe(
    StatusChangesDocument,
    ({ statusChanges: change }) => {
      if (change.full) held = change.full as unknown as Composition;
      else if (change.delta && held && held.seq === change.baseSeq) held = applyDelta(held, change.delta as unknown as StatusDelta);
      else return; // a delta this watcher cannot apply: the gateway sends a whole one next
      if (ctx.json) ctx.print(JSON.stringify({ statusChanges: change }));
      else ctx.print(`${process.stdout.isTTY ? '\x1b[2J\x1b[H' : '\n'}${summary(held as unknown as Summary)}`);
    },
    stop.signal,
    // After a disconnect, resubscribed from the composition held: the deltas since, not the whole mesh again.
    () => (held ? { after: held.seq } : {}),
  );
}

export function statusCommands(program: Command, run: Runner): void {
  program
    .command('status')
    .description('the last composition of the mesh: machines by site and state, unheld seats, plans')
    .option('--watch', 'follow statusChanges and redraw the summary on each composition (Ctrl-C exits 0)')
    .action((options: { watch?: boolean }) =>
      run(async (ctx) => {
        if (options.watch) return watch(ctx);
        const data = await ctx.client.request(StatusDocument);
        show(ctx, data, (d) => summary(d.status));
      }),
    );
}

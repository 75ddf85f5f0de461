import type { Command } from 'commander';
import { BEHIND_SHOWN_S, behindSeconds } from '../../services/status/composition.js';
import { tryApplyDelta } from '../../services/status/delta/algebra.js';
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
    ...(behind > BEHIND_SHOWN_S ? [`behind by ${Math.round(behind)} s: news up to ${status.heardUntil} is heard, machines shown as then`] : []),
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

/**
 * Follows statusChanges, applying deltas with the gateway's own algebra, redrawing the summary
 * after each, resuming after a disconnect; Ctrl-C ends it (exit 0). A delta the algebra refuses
 * (not of the seq held, or one that does not fit it) ends the subscription: the watcher forgets
 * what it held and subscribes again, so the gateway sends a whole composition, never a wrong one.
 */
async function watch(ctx: CommandContext): Promise<void> {
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  let held: StatusPartsFragment | undefined;
  for (;;) {
    const refused = new AbortController();
    const ended = AbortSignal.any([stop.signal, refused.signal]);
    await ctx.client.subscribe(
      StatusChangesDocument,
      ({ statusChanges: change }) => {
        if (ended.aborted) return;
        if (change.full) held = change.full;
        else if (change.delta) {
          held = tryApplyDelta(held, change.delta);
          // Refused, or a delta before any whole composition (never sent to a correct client).
          if (!held) {
            refused.abort();
            return;
          }
        } else return;
        if (ctx.json) ctx.print(JSON.stringify({ statusChanges: change }));
        else ctx.print(`${process.stdout.isTTY ? '\x1b[2J\x1b[H' : '\n'}${summary(held)}`);
      },
      ended,
      // After a disconnect, resubscribed from the composition held: the deltas since, not the whole mesh again.
      () => (held ? { after: held.seq } : {}),
    );
    if (!refused.signal.aborted) return;
  }
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

import { type Command, InvalidArgumentError, Option } from 'commander';
import { Refused } from '../client.js';
import { type CommandContext, type Runner, show, succeeded } from '../context.js';
import { CallChangedDocument, CallDocument, type CallPartsFragment, type CallState, CallsDocument, CallVerbDocument } from '../generated/graphql.js';
import { col, record, table } from '../output.js';
import { followLive } from './follow.js';

const CALL_STATES: readonly CallState[] = ['RUNNING', 'OK', 'FAILED', 'ABANDONED'];

const callRecord = (c: CallPartsFragment) =>
  record([
    ['call', c.id],
    ['seat', c.seat],
    ['verb', c.verb],
    ['caller', c.caller],
    ['door', c.door],
    ['state', c.state],
    ['started', c.startedAt],
    ['ended', c.endedAt],
    ['args', c.args],
    ['answer', c.answerTruncated ? '(cut at 64 KiB; read it with --json)' : c.answerJson],
    ['error', c.errorCode ? `${c.errorCode}: ${c.error}` : null],
  ]);

/** Collects `--arg k=v` into {k: v}; a value that reads as JSON (a number, true, [..], {..}) is taken as that. */
function argPair(value: string, previous: Record<string, unknown> = {}): Record<string, unknown> {
  const at = value.indexOf('=');
  if (at < 1) throw new InvalidArgumentError(`--arg takes name=value, got ${JSON.stringify(value)}`);
  const raw = value.slice(at + 1);
  let parsed: unknown = raw;
  try {
    parsed = JSON.parse(raw);
  } catch {
    // a plain string
  }
  return { ...previous, [value.slice(0, at)]: parsed };
}

/**
 * Follows callChanged: each call as it starts and as it ends, a line each (with --json, its data
 * as one line of JSON); after a reconnect or a drop, resumed from the last change's cursor.
 */
async function followCalls(ctx: CommandContext, seat: string | undefined, state: CallState | undefined): Promise<void> {
  let after: string | undefined;
  await followLive(
    ctx,
    CallChangedDocument,
    (data) => {
      const c = data.callChanged;
      if (c.cursor) after = c.cursor;
      if (ctx.json) ctx.print(JSON.stringify(data));
      else
        ctx.print(
          [c.endedAt ?? c.startedAt, c.id, `${c.seat}.${c.verb}`, c.caller, c.state, c.errorCode ? `${c.errorCode}: ${c.error}` : ''].join('  ').trimEnd(),
        );
    },
    () => ({ seat, state, ...(after && { after }) }),
  );
}

export function callCommands(program: Command, run: Runner): void {
  program
    .command('calls')
    .description('calls newest first, of one seat (any of its names) and state when given')
    .option('--seat <seat>', 'a seat, by its name or an alias')
    .addOption(new Option('--state <state>', 'RUNNING, OK, FAILED or ABANDONED').choices(CALL_STATES))
    .option('--follow', 'then each call as it starts and as it ends, on any replica (Ctrl-C exits 0)')
    .action((o: { seat?: string; state?: CallState; follow?: boolean }) =>
      run(async (ctx) => {
        show(ctx, await ctx.client.request(CallsDocument, { seat: o.seat, state: o.state, first: 100 }), (d) =>
          table(
            d.calls.edges.map((e) => e.node),
            [
              col('call', (c) => c.id),
              col('seat', (c) => c.seat),
              col('verb', (c) => c.verb),
              col('caller', (c) => c.caller),
              col('state', (c) => c.state),
              col('started', (c) => c.startedAt),
              col('error', (c) => c.errorCode),
            ],
          ),
        );
        if (o.follow) await followCalls(ctx, o.seat, o.state);
      }),
    );
  program
    .command('call')
    .description('one call, by id, across restarts of any replica')
    .argument('<id>')
    .action((id: string) =>
      run(async (ctx) => {
        const data = await ctx.client.request(CallDocument, { id });
        if (!data.call) throw new Refused('NOT_FOUND', `no call named ${JSON.stringify(id)}`, data);
        show(ctx, data, (d) => callRecord(d.call!));
      }),
    );
  program
    .command('call-verb')
    .description("calls any seat's verb, its arguments judged against the seat's row first")
    .argument('<seat>')
    .argument('<verb>')
    .option('--arg <name=value>', 'one argument; repeat for each', argPair)
    .option('--timeout-ms <ms>', 'how long to wait for the answer (default 10000, at most 60000)', (v) => Number(v))
    .action((seat: string, verb: string, o: { arg?: Record<string, unknown>; timeoutMs?: number }) =>
      run(async (ctx) => {
        const data = await ctx.client.request(CallVerbDocument, { seat, verb, args: o.arg ?? {}, timeoutMs: o.timeoutMs });
        const call = succeeded(ctx, data, data.callVerb);
        if (!ctx.json) ctx.print(callRecord(call));
        if (call.state !== 'OK') throw new Refused(call.errorCode ?? call.state, call.error ?? `the call ended ${call.state}`);
      }),
    );
}

import { readFileSync } from 'node:fs';
import { type Command, InvalidArgumentError } from 'commander';
import { Refused } from '../client.js';
import { type CommandContext, type Runner, show, succeeded } from '../context.js';
import {
  AddSeatHolderDocument,
  DefineSeatDocument,
  type HoldingPartsFragment,
  HoldSeatDocument,
  ReleaseSeatDocument,
  RenameSeatDocument,
  SeatDocument,
  type SeatInput,
  type SeatPartsFragment,
  SeatsDocument,
} from '../generated/graphql.js';
import { col, record, table } from '../output.js';

const holdersOf = (seat: SeatPartsFragment) => seat.holders.map((h) => `${h.module}@${h.machine.name}${h.derived ? '*' : ''}`);

const seatTable = (seats: readonly SeatPartsFragment[]) =>
  table(seats, [
    col('seat', (s) => s.name),
    col('scope', (s) => s.scope),
    col('replicated', (s) => s.replicated),
    col('aliases', (s) => s.aliases),
    col('holders (*derived)', holdersOf),
  ]);

const holdingTable = (holdings: readonly HoldingPartsFragment[]) =>
  table(holdings, [
    col('seat', (h) => h.seat.name),
    col('machine', (h) => h.machine.name),
    col('module', (h) => h.module),
    col('scope', (h) => h.scope),
    col('derived', (h) => h.derived),
    col('since', (h) => h.since),
  ]);

function seatRecord(seat: SeatPartsFragment): string {
  return record([
    ['seat', seat.name],
    ['scope', seat.scope],
    ['delivers', seat.delivers],
    ['decided', seat.decided],
    ['replicated', seat.replicated],
    ['aliases', seat.aliases],
    ['accepts', seat.accepts],
    ['emits', seat.emits],
    ['serves', seat.serves.map((v) => `${v.name}(${v.args.map((a) => `${a.name}${a.required ? '!' : ''}`).join(' ')})`)],
    ['holders', holdersOf(seat)],
  ]);
}

/** Reads `--file seat.json`: a SeatInput as JSON. */
function seatFile(path: string): SeatInput {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new InvalidArgumentError(`cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text) as SeatInput;
  } catch (error) {
    throw new InvalidArgumentError(`${path} is not JSON: ${(error as Error).message}`);
  }
}

type HolderOptions = { scope?: string; why?: string };

export function seatCommands(program: Command, run: Runner): void {
  const seats = program
    .command('seats')
    .description('every seat, by name, with its holders')
    .action(() => run(async (ctx) => show(ctx, await ctx.client.request(SeatsDocument), (d) => seatTable(d.seats))));
  program
    .command('seat')
    .description('one seat, by its name or an alias')
    .argument('<name>')
    .action((name: string) =>
      run(async (ctx) => {
        const data = await ctx.client.request(SeatDocument, { name });
        if (!data.seat) throw new Refused('NOT_FOUND', `no seat named ${JSON.stringify(name)}`, data);
        show(ctx, data, (d) => seatRecord(d.seat!));
      }),
    );
  seats
    .command('rename')
    .description('renames a seat: the old name becomes an alias')
    .argument('<from>')
    .argument('<to>')
    .option('--why <why>', 'why, kept in the hand-act log')
    .action((from: string, to: string, options: { why?: string }) =>
      run(async (ctx) => {
        const data = await ctx.client.request(RenameSeatDocument, { from, to, why: options.why });
        const seat = succeeded(ctx, data, data.renameSeat);
        if (!ctx.json) ctx.print(`renamed ${from} to ${seat.name}; aliases: ${seat.aliases.join(', ')}`);
      }),
    );
  const holder = (name: 'hold' | 'add-holder' | 'release', description: string) =>
    seats
      .command(name)
      .description(description)
      .argument('<seat>')
      .argument('<machine>')
      .argument('<module>')
      .option('--why <why>', 'why, kept in the hand-act log');
  const holdings = (ctx: CommandContext, data: unknown, result: Parameters<typeof succeeded<HoldingPartsFragment[]>>[2]) => {
    const list = succeeded(ctx, data, result);
    if (!ctx.json) ctx.print(holdingTable(list));
  };
  holder('hold', "makes one running module the seat's only holder")
    .option('--scope <scope>', 'the holding scope (default: the seat scope)')
    .action((seat: string, machine: string, module: string, o: HolderOptions) =>
      run(async (ctx) => {
        const data = await ctx.client.request(HoldSeatDocument, { seat, machine, module, scope: o.scope, why: o.why });
        holdings(ctx, data, data.holdSeat);
      }),
    );
  holder('add-holder', 'adds a holder to a replicated seat')
    .option('--scope <scope>', 'the holding scope (default: the seat scope)')
    .action((seat: string, machine: string, module: string, o: HolderOptions) =>
      run(async (ctx) => {
        const data = await ctx.client.request(AddSeatHolderDocument, { seat, machine, module, scope: o.scope, why: o.why });
        holdings(ctx, data, data.addSeatHolder);
      }),
    );
  holder('release', 'ends one recorded holding').action((seat: string, machine: string, module: string, o: HolderOptions) =>
    run(async (ctx) => {
      const data = await ctx.client.request(ReleaseSeatDocument, { seat, machine, module, why: o.why });
      holdings(ctx, data, data.releaseSeat);
    }),
  );
  seats
    .command('define')
    .description('creates a seat, or changes the one its name resolves to, from a SeatInput JSON file')
    .requiredOption('--file <seat.json>', 'the seat as JSON: {"name", "scope", "delivers", "decided", "replicated", "accepts", "emits", "serves"}', seatFile)
    .option('--why <why>', 'why, kept in the hand-act log')
    .action((options: { file: SeatInput; why?: string }) =>
      run(async (ctx) => {
        const data = await ctx.client.request(DefineSeatDocument, { input: options.file, why: options.why });
        const seat = succeeded(ctx, data, data.defineSeat);
        if (!ctx.json) ctx.print(seatRecord(seat));
      }),
    );
}

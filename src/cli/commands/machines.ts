import { type Command, InvalidArgumentError, Option } from 'commander';
import { Refused } from '../client.js';
import { type CommandContext, type Runner, show } from '../context.js';
import { MachineDocument, type MachinePartsFragment, type MachineState, MachinesPageDocument } from '../generated/graphql.js';
import { col, record, table } from '../output.js';

const MACHINE_STATES: readonly MachineState[] = ['UP', 'LATE', 'SILENT'];
/** Machines a page: the most the gateway gives (its NAME_PAGE_MAX), so the fewest round trips. */
const MACHINES_PAGE = 1000;

const holdingsOf = (m: MachinePartsFragment) => m.holdings.map((h) => `${h.seat.name}:${h.module}${h.derived ? '*' : ''}`);

export function machineCommands(program: Command, run: Runner): void {
  program
    .command('machines')
    .description('every machine, by name, read page after page; of one state, site or name prefix when given')
    .addOption(new Option('--state <state>', 'UP, LATE or SILENT').choices(MACHINE_STATES))
    .option('--site <site>', 'one site')
    .option('--name-starts-with <prefix>', 'machines whose name starts with this')
    .addOption(new Option('--page-size <n>', `machines asked for a page, 1 to ${MACHINES_PAGE}`).argParser(pageSize).default(MACHINES_PAGE))
    .action((options: { state?: MachineState; site?: string; nameStartsWith?: string; pageSize: number }) =>
      run(async (ctx) => {
        const machines = await everyMachine(ctx, options);
        // --json prints what the plain `machines` list answers: `{ machines: [...] }`.
        show(ctx, { machines }, (d) =>
          table(d.machines, [
            col('machine', (m) => m.name),
            col('site', (m) => m.site),
            col('state', (m) => m.state),
            col('last heard', (m) => m.lastHeardAt),
            col('modules', (m) => m.modules),
            col('holdings (*derived)', holdingsOf),
          ]),
        );
      }),
    );
  program
    .command('machine')
    .description('one machine, by name')
    .argument('<name>')
    .action((name: string) =>
      run(async (ctx) => {
        const data = await ctx.client.request(MachineDocument, { name });
        if (!data.machine) throw new Refused('NOT_FOUND', `no machine named ${JSON.stringify(name)}`, data);
        const m = data.machine;
        show(ctx, data, () =>
          record([
            ['machine', m.name],
            ['site', m.site],
            ['state', m.state],
            ['last heard', m.lastHeardAt],
            ['heartbeats', m.heartbeats],
            ['modules', m.modules],
            ['holdings', holdingsOf(m)],
          ]),
        );
      }),
    );
}

function pageSize(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > MACHINES_PAGE) throw new InvalidArgumentError(`a whole number from 1 to ${MACHINES_PAGE}`);
  return n;
}

/** Every machine the filters leave, through `machinesConnection`, one page after another. */
async function everyMachine(
  ctx: CommandContext,
  options: { state?: MachineState; site?: string; nameStartsWith?: string; pageSize: number },
): Promise<MachinePartsFragment[]> {
  const machines: MachinePartsFragment[] = [];
  let after: string | undefined;
  for (;;) {
    const { machinesConnection: page } = await ctx.client.request(MachinesPageDocument, {
      state: options.state,
      site: options.site,
      nameStartsWith: options.nameStartsWith,
      first: options.pageSize,
      after,
    });
    for (const edge of page.edges) machines.push(edge.node);
    if (!page.pageInfo.hasNextPage) return machines;
    after = page.pageInfo.endCursor ?? undefined;
  }
}

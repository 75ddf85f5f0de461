import { type Command, Option } from 'commander';
import { Refused } from '../client.js';
import { type Runner, show } from '../context.js';
import { MachineDocument, type MachinePartsFragment, type MachineState, MachinesDocument } from '../generated/graphql.js';
import { col, record, table } from '../output.js';

const MACHINE_STATES: readonly MachineState[] = ['UP', 'LATE', 'SILENT'];
const holdingsOf = (m: MachinePartsFragment) => m.holdings.map((h) => `${h.seat.name}:${h.module}${h.derived ? '*' : ''}`);

export function machineCommands(program: Command, run: Runner): void {
  program
    .command('machines')
    .description('every machine, by name; of one state or site when given')
    .addOption(new Option('--state <state>', 'UP, LATE or SILENT').choices(MACHINE_STATES))
    .option('--site <site>', 'one site')
    .action((options: { state?: MachineState; site?: string }) =>
      run(async (ctx) =>
        show(ctx, await ctx.client.request(MachinesDocument, { state: options.state, site: options.site }), (d) =>
          table(d.machines, [
            col('machine', (m) => m.name),
            col('site', (m) => m.site),
            col('state', (m) => m.state),
            col('last heard', (m) => m.lastHeardAt),
            col('modules', (m) => m.modules),
            col('holdings (*derived)', holdingsOf),
          ]),
        ),
      ),
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

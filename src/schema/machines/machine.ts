import { NAME_PAGE_DEFAULT, NAME_PAGE_MAX } from '../../kernel/pages.js';
import type { Machine } from '../../services/machines/machines.js';
import { countMachines, type MachinePageFilter, machineCursor, pageMachines } from '../../services/machines/pages.js';
import { type MachineReading, machinesAsShown, stateAsShown } from '../../services/machines/shown.js';
import { forgetMachineVerb } from '../../services/machines/verbs.js';
import { builder } from '../support/builder.js';
import { selected } from '../support/known-loader.js';
import { namePage } from '../support/pages.js';
import { verbMutation } from '../support/verb-mutation.js';
import { readingOf } from './loaders.js';

export const MachineStateEnum = builder.enumType('MachineState', {
  description: 'UP; LATE once news heard past 1.5 expected heartbeat intervals after its last beat is heard with none of its own; SILENT past 6.',
  values: ['UP', 'LATE', 'SILENT'] as const,
});

/** The fields of a machine that its name and site answer: a holding answers a selection of only these itself. */
export const MACHINE_BRIEF_FIELDS: ReadonlySet<string> = new Set(['name', 'site', '__typename']);

export const MachineRef = builder.objectRef<Machine>('Machine').implement({
  description: 'A machine of the mesh, as its heartbeats describe it.',
  // Machine.holdings is added in holding.ts, where HoldingRef is, so the two files import one way.
  fields: (t) => ({
    name: t.exposeString('name'),
    site: t.exposeString('site', { nullable: true }),
    firstHeardAt: t.field({ type: 'DateTime', resolve: (m) => m.firstHeardAt }),
    lastHeardAt: t.field({ type: 'DateTime', resolve: (m) => m.lastHeardAt }),
    heartbeats: t.exposeInt('heartbeats'),
    state: t.field({
      type: MachineStateEnum,
      description:
        'Judged at how far news was heard when the request came (`Status.heardUntil`), not at the wall clock, and never better than the last composition showed for the same `lastHeardAt`: the state `status` shows.',
      resolve: (m, _args, ctx) => stateAsShown(m, ctx.judging, readingOf(ctx).shown),
    }),
    modules: t.exposeStringList('modules', { description: 'The modules running on it.' }),
  }),
});

builder.queryFields((t) => ({
  machines: t.field({
    type: [MachineRef],
    description:
      'Every machine, by name, in one answer (`machinesConnection` pages them); of one `site` and in one `state` (judged as `Machine.state` is) when given.',
    args: { state: t.arg({ type: MachineStateEnum }), site: t.arg.string() },
    resolve: async (_root, args, ctx, info) => {
      const state = args.state ? { is: args.state, judging: ctx.judging } : null;
      const machines = await machinesAsShown(ctx.mesh.db, { site: args.site, state }, readingOf(ctx));
      for (const machine of machines) ctx.loaders.machine.prime(machine.name, machine);
      // Look-ahead: the holdings of every machine in one statement before the machines resolve.
      const holdings = selected(info.fieldNodes, 'holdings');
      if (holdings.length) await ctx.loaders.holdingsByMachine.asks(holdings).prefetch(machines.map((m) => m.name));
      return machines;
    },
  }),
  machinesConnection: t.connection(
    {
      type: MachineRef,
      description: `Machines by name (code-unit order), ${NAME_PAGE_DEFAULT} a page unless asked, at most ${NAME_PAGE_MAX} (more is an INVALID error, not a shorter page); of one \`site\`, in one \`state\` (judged as \`Machine.state\` is), whose name starts with \`nameStartsWith\`, when given. Cursors hold the name itself: valid on any replica, after restarts, and while machines come and go.`,
      args: { site: t.arg.string(), state: t.arg({ type: MachineStateEnum }), nameStartsWith: t.arg.string() },
      resolve: async (_root, args, ctx, info) => {
        const filter: MachinePageFilter = {
          site: args.site,
          nameStartsWith: args.nameStartsWith,
          state: args.state ? { is: args.state, judging: ctx.judging } : null,
        };
        const reading: MachineReading = readingOf(ctx);
        const { items: machines, connection } = await namePage(
          args,
          machineCursor,
          (page) => pageMachines(ctx.mesh.db, filter, page, reading),
          () => countMachines(ctx.mesh.db, filter, reading),
        );
        for (const machine of machines) ctx.loaders.machine.prime(machine.name, machine);
        const holdings = selected(selected(selected(info.fieldNodes, 'edges'), 'node'), 'holdings');
        if (holdings.length) await ctx.loaders.holdingsByMachine.asks(holdings).prefetch(machines.map((m) => m.name));
        return connection;
      },
    },
    {
      name: 'MachineConnection',
      description: 'A page of machines, by name.',
      fields: (t) => ({
        totalCount: t.int({ description: 'How many machines the filters leave, over every page.', resolve: (connection) => connection.totalCount() }),
      }),
    },
    { name: 'MachineEdge' },
  ),
  machine: t.field({
    type: MachineRef,
    nullable: true,
    args: { name: t.arg.string({ required: true }) },
    resolve: async (_root, { name }, ctx) => (await ctx.loaders.machine.get(name)) ?? null,
  }),
}));

builder.mutationFields((t) => ({
  forgetMachine: t.field({
    type: MachineRef,
    description:
      'Deletes a machine and its assignments; answers the machine as it was. Refused while it holds a seat, recorded or derived. A heartbeat from it later is heard afresh. Leaves a hand-act.',
    ...verbMutation(t, forgetMachineVerb),
  }),
}));

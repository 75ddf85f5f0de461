import { builder } from '../schema/builder.js';
import { selected } from '../schema/known-loader.js';
import { MachineRef, MachineStateEnum } from '../schema/machine.js';
import { listMachines } from '../services/machines/machines.js';
import { forgetMachineVerb } from '../services/machines/verbs.js';
import { verbMutation } from './verb-mutation.js';

builder.queryFields((t) => ({
  machines: t.field({
    type: [MachineRef],
    description: 'Every machine, by name; of one `site` and in one `state` (judged as `Machine.state` is) when given.',
    args: { state: t.arg({ type: MachineStateEnum }), site: t.arg.string() },
    resolve: async (_root, args, ctx, info) => {
      const state = args.state ? { is: args.state, judging: ctx.judging } : null;
      const machines = await listMachines(ctx.mesh.db, { site: args.site, state });
      for (const machine of machines) ctx.loaders.machine.prime(machine.name, machine);
      // Look-ahead: the holdings of every machine in one statement before the machines resolve.
      const holdings = selected(info.fieldNodes, 'holdings');
      if (holdings.length) await ctx.loaders.holdingsByMachine.asks(holdings).prefetch(machines.map((m) => m.name));
      return machines;
    },
  }),
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

import { builder } from '../schema/builder.js';
import { MachineRef } from '../schema/machine.js';
import { listMachines } from '../services/machines/machines.js';

builder.queryFields((t) => ({
  machines: t.field({
    type: [MachineRef],
    description: 'Every machine, by name.',
    resolve: async (_root, _args, ctx) => {
      const machines = await listMachines(ctx.mesh.db);
      for (const machine of machines) ctx.loaders.machine.prime(machine.name, machine);
      return machines;
    },
  }),
  machine: t.field({
    type: MachineRef,
    nullable: true,
    args: { name: t.arg.string({ required: true }) },
    resolve: async (_root, { name }, ctx) => (await ctx.loaders.machine.load(name)) ?? null,
  }),
}));

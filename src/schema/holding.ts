import type { Holding } from '../services/seats/holdings.js';
import { builder } from './builder.js';
import { MachineRef } from './machine.js';
import { SeatRef } from './seat.js';

export const HoldingRef = builder.objectRef<Holding>('Holding');

HoldingRef.implement({
  description: 'A module on a machine holding a seat.',
  fields: (t) => ({
    seat: t.field({
      type: SeatRef,
      resolve: async (holding, _args, ctx) => {
        const seat = await ctx.loaders.seat.load(holding.seat);
        if (!seat) throw new Error(`holding names seat ${holding.seat}, which is gone`);
        return seat;
      },
    }),
    scope: t.exposeString('scope'),
    machine: t.field({
      type: MachineRef,
      resolve: async (holding, _args, ctx) => {
        const machine = await ctx.loaders.machine.load(holding.machine);
        if (!machine) throw new Error(`holding names machine ${holding.machine}, which is gone`);
        return machine;
      },
    }),
    module: t.exposeString('module'),
    site: t.exposeString('site', { nullable: true }),
    since: t.field({ type: 'DateTime', resolve: (holding) => holding.since }),
    derived: t.exposeBoolean('derived', { description: 'Held because a running module claims it, not on record.' }),
  }),
});

builder.objectField(SeatRef, 'holders', (t) =>
  t.field({
    type: [HoldingRef],
    description: 'The holders on record, or where there are none, every running module whose manifest claims the seat (derived).',
    resolve: (seat, _args, ctx) => ctx.loaders.holdingsBySeat.load(seat.name),
  }),
);

builder.objectField(MachineRef, 'holdings', (t) => t.field({ type: [HoldingRef], resolve: (m, _args, ctx) => ctx.loaders.holdingsByMachine.load(m.name) }));

import { builder } from '../schema/builder.js';
import { SeatInput, SeatRef } from '../schema/seat.js';
import { defineSeat } from '../services/seats/define.js';
import { renameSeat } from '../services/seats/rename.js';
import { listSeats } from '../services/seats/seats.js';

builder.queryFields((t) => ({
  seats: t.field({
    type: [SeatRef],
    description: 'Every seat, by name.',
    resolve: async (_root, _args, ctx) => {
      const seats = await listSeats(ctx.mesh.db, ctx.mesh.catalogue);
      for (const seat of seats) ctx.loaders.seat.prime(seat.name, seat);
      return seats;
    },
  }),
  seat: t.field({
    type: SeatRef,
    nullable: true,
    description: 'The seat a name or an alias resolves to.',
    args: { name: t.arg.string({ required: true }) },
    resolve: async (_root, { name }, ctx) => (await ctx.loaders.seat.load(name)) ?? null,
  }),
}));

builder.mutationFields((t) => ({
  renameSeat: t.field({
    type: SeatRef,
    description: 'Renames a seat: the old name becomes an alias; holdings and aliases follow.',
    authScopes: { admin: true },
    errors: {},
    args: { from: t.arg.string({ required: true }), to: t.arg.string({ required: true }) },
    resolve: (_root, { from, to }, ctx) => renameSeat(ctx.mesh.db, ctx.mesh.catalogue, from, to),
  }),
  defineSeat: t.field({
    type: SeatRef,
    description: 'Creates a seat, or changes the one its name resolves to.',
    authScopes: { admin: true },
    errors: {},
    args: { input: t.arg({ type: SeatInput, required: true }) },
    resolve: (_root, { input }, ctx) => defineSeat(ctx.mesh.db, ctx.mesh.catalogue, input),
  }),
}));

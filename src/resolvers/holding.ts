import { NotFound } from '../kernel/errors.js';
import { checkName } from '../kernel/names.js';
import { builder } from '../schema/builder.js';
import { HoldingRef } from '../schema/holding.js';
import { changeHolderBy } from '../services/seats/changes.js';
import { listHoldings } from '../services/seats/holdings.js';
import { resolveSeatName } from '../services/seats/seats.js';
import { changeBy, seatChangeArgs } from './seat.js';

builder.queryFields((t) => ({
  holdings: t.field({
    type: [HoldingRef],
    description: 'Holdings, recorded or derived, of one seat (name or alias), one machine, or all.',
    args: { seat: t.arg.string(), machine: t.arg.string() },
    resolve: async (_root, args, ctx) => {
      let seats: string[] | undefined;
      if (args.seat != null) {
        const seat = await resolveSeatName(ctx.mesh.db, checkName(args.seat, 'seat'));
        if (!seat) throw new NotFound('seat', args.seat);
        seats = [seat];
      }
      const machines = args.machine != null ? [checkName(args.machine, 'machine')] : undefined;
      return listHoldings(ctx.mesh.db, { seats, machines });
    },
  }),
}));

const holderArgs = (t: Parameters<Parameters<typeof builder.mutationFields>[0]>[0]) => ({
  seat: t.arg.string({ required: true }),
  machine: t.arg.string({ required: true }),
  module: t.arg.string({ required: true }),
  ...seatChangeArgs(t),
});

builder.mutationFields((t) => ({
  holdSeat: t.field({
    type: [HoldingRef],
    description: "Makes one running module the seat's only holder; answers the seat's holdings. Leaves a hand-act.",
    authScopes: { admin: true },
    errors: {},
    args: { ...holderArgs(t), scope: t.arg.string() },
    resolve: (_root, args, ctx) => changeHolderBy(ctx.mesh, changeBy(ctx, args), 'holdSeat', args),
  }),
  addSeatHolder: t.field({
    type: [HoldingRef],
    description: 'Adds a holder to a replicated seat beside those on record; idempotent. Leaves a hand-act.',
    authScopes: { admin: true },
    errors: {},
    args: { ...holderArgs(t), scope: t.arg.string() },
    resolve: (_root, args, ctx) => changeHolderBy(ctx.mesh, changeBy(ctx, args), 'addSeatHolder', args),
  }),
  releaseSeat: t.field({
    type: [HoldingRef],
    description: "Ends one recorded holding; answers the seat's holdings after it. Leaves a hand-act.",
    authScopes: { admin: true },
    errors: {},
    args: holderArgs(t),
    resolve: (_root, args, ctx) => changeHolderBy(ctx.mesh, changeBy(ctx, args), 'releaseSeat', args),
  }),
}));

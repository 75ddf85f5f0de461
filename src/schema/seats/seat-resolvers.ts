import { NAME_PAGE_DEFAULT, NAME_PAGE_MAX } from '../../kernel/pages.js';
import { defineSeatBy, renameSeatBy, type SeatChangeBy } from '../../services/seats/changes.js';
import { countSeats, pageSeats, type SeatPageFilter, seatCursor } from '../../services/seats/pages.js';
import { listSeats } from '../../services/seats/seats.js';
import { retireSeatVerb } from '../../services/seats/verbs.js';
import { builder } from '../support/builder.js';
import type { GatewayContext } from '../support/context.js';
import { selected } from '../support/known-loader.js';
import { namePage } from '../support/pages.js';
import { verbMutation } from '../support/verb-mutation.js';
import { SeatInput, SeatRef } from './seat.js';

builder.queryFields((t) => ({
  seats: t.field({
    type: [SeatRef],
    description: 'Every seat, by name, in one answer (`seatsConnection` pages them).',
    resolve: async (_root, _args, ctx, info) => {
      const seats = await listSeats(ctx.mesh.db, ctx.mesh.catalogue);
      for (const seat of seats) ctx.loaders.seat.prime(seat.name, seat);
      // Look-ahead: the holders of every seat in one statement before the seats resolve, so each seat's are at hand.
      const holders = selected(info.fieldNodes, 'holders');
      if (holders.length) await ctx.loaders.holdingsBySeat.asks(holders).prefetch(seats.map((s) => s.name));
      return seats;
    },
  }),
  seatsConnection: t.connection(
    {
      type: SeatRef,
      description: `Seats by name (code-unit order), ${NAME_PAGE_DEFAULT} a page unless asked, at most ${NAME_PAGE_MAX} (more is an INVALID error, not a shorter page); whose name starts with \`nameStartsWith\`, and held or not (\`held\`: a holding on record or derived), when given. Cursors hold the name itself: valid on any replica and after restarts.`,
      args: { nameStartsWith: t.arg.string(), held: t.arg.boolean() },
      resolve: async (_root, args, ctx, info) => {
        const filter: SeatPageFilter = { nameStartsWith: args.nameStartsWith, held: args.held };
        const { items: seats, connection } = await namePage(
          args,
          seatCursor,
          (page) => pageSeats(ctx.mesh.db, ctx.mesh.catalogue, filter, page),
          () => countSeats(ctx.mesh.db, filter),
        );
        for (const seat of seats) ctx.loaders.seat.prime(seat.name, seat);
        const holders = selected(selected(selected(info.fieldNodes, 'edges'), 'node'), 'holders');
        if (holders.length) await ctx.loaders.holdingsBySeat.asks(holders).prefetch(seats.map((s) => s.name));
        return connection;
      },
    },
    {
      name: 'SeatConnection',
      description: 'A page of seats, by name.',
      fields: (t) => ({
        totalCount: t.int({ description: 'How many seats the filters leave, over every page.', resolve: (connection) => connection.totalCount() }),
      }),
    },
    { name: 'SeatEdge' },
  ),
  seat: t.field({
    type: SeatRef,
    nullable: true,
    description: 'The seat a name or an alias resolves to.',
    args: { name: t.arg.string({ required: true }) },
    resolve: async (_root, { name }, ctx) => (await ctx.loaders.seat.get(name)) ?? null,
  }),
}));

type MutationFieldBuilder = Parameters<Parameters<typeof builder.mutationFields>[0]>[0];

/** What every seat change takes besides its own arguments: the hand-act it leaves. */
export const seatChangeArgs = (t: MutationFieldBuilder) => ({
  why: t.arg.string({ description: 'Why this is done, in a sentence; kept in the hand-act log, as "not given" when absent or blank.' }),
  cause: t.arg.string({ description: 'What made it necessary, as a short label; repeatedCauses groups hand-acts by it.' }),
  condition: t.arg.string({ description: 'The state of the mesh that was seen when acting.' }),
});

/** The hand-act's actor and reasons, from the caller and the change's arguments. */
export const changeBy = (ctx: GatewayContext, args: { why?: string | null; cause?: string | null; condition?: string | null }): SeatChangeBy => ({
  actor: ctx.caller.name,
  why: args.why,
  cause: args.cause,
  condition: args.condition,
});

builder.mutationFields((t) => ({
  renameSeat: t.field({
    type: SeatRef,
    description: "Renames a seat: the old name becomes an alias; holdings and aliases follow. The controller's own seat is refused. Leaves a hand-act.",
    authScopes: { admin: true },
    errors: {},
    args: { from: t.arg.string({ required: true }), to: t.arg.string({ required: true }), ...seatChangeArgs(t) },
    resolve: (_root, args, ctx) => renameSeatBy(ctx.mesh, changeBy(ctx, args), args.from, args.to),
  }),
  defineSeat: t.field({
    type: SeatRef,
    description: 'Creates a seat, or changes the one its name resolves to; fields left out keep their value. Leaves a hand-act.',
    authScopes: { admin: true },
    errors: {},
    args: { input: t.arg({ type: SeatInput, required: true }), ...seatChangeArgs(t) },
    resolve: (_root, args, ctx) => defineSeatBy(ctx.mesh, changeBy(ctx, args), args.input),
  }),
  retireSeat: t.field({
    type: SeatRef,
    description:
      "Deletes a seat and its aliases; answers the seat as it was. Refused while it has any holding, recorded or derived, while a plan not CLOSED names it, and for the controller's own seat. Its CLOSED plans go with it. Leaves a hand-act.",
    ...verbMutation(t, retireSeatVerb),
  }),
}));

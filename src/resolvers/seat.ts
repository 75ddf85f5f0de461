import { GraphQLError } from 'graphql';
import { builder } from '../schema/builder.js';
import { AliasRef } from '../schema/alias.js';
import { HoldingRef } from '../schema/holding.js';
import { SeatRef } from '../schema/seat.js';
import { checkName } from '../kernel/names.js';
import { ARG_TYPES } from '../services/seats/protocol.js';
import {
  addSeatHolder,
  defineSeat,
  holdSeat,
  listAliases,
  listHoldings,
  listSeats,
  releaseSeat,
  renameSeat,
  resolveSeatName,
} from '../services/seats/seats.js';

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
  aliases: t.field({
    type: [AliasRef],
    description: "Every seat's former names.",
    resolve: (_root, _args, ctx) => listAliases(ctx.mesh.db),
  }),
  holdings: t.field({
    type: [HoldingRef],
    description: 'Holdings, recorded or derived, of one seat (name or alias), one machine, or all.',
    args: { seat: t.arg.string(), machine: t.arg.string() },
    resolve: async (_root, args, ctx) => {
      let seats: string[] | undefined;
      if (args.seat != null) {
        const seat = await resolveSeatName(ctx.mesh.db, checkName(args.seat, 'seat'));
        if (!seat) throw new GraphQLError(`no seat named ${JSON.stringify(args.seat)}`, { extensions: { code: 'NOT_FOUND' } });
        seats = [seat];
      }
      const machines = args.machine != null ? [checkName(args.machine, 'machine')] : undefined;
      return listHoldings(ctx.mesh.db, { seats, machines });
    },
  }),
}));

const VerbArgInput = builder.inputType('VerbArgInput', {
  fields: (t) => ({
    name: t.string({ required: true }),
    type: t.string({ required: true, description: `One of ${ARG_TYPES.join(', ')}.` }),
    required: t.boolean({ defaultValue: false }),
  }),
});

const VerbInput = builder.inputType('VerbInput', {
  fields: (t) => ({
    name: t.string({ required: true }),
    acting: t.boolean({ defaultValue: false }),
    args: t.field({ type: [VerbArgInput], defaultValue: [] }),
  }),
});

const SeatInput = builder.inputType('SeatInput', {
  description: 'A seat to create, or changes to the seat the name resolves to: fields left out keep their value.',
  fields: (t) => ({
    name: t.string({ required: true }),
    scope: t.string(),
    delivers: t.string(),
    decided: t.string(),
    replicated: t.boolean(),
    accepts: t.stringList(),
    emits: t.stringList(),
    serves: t.field({ type: [VerbInput] }),
    protocol: t.string({ description: 'The whole protocol as JSON text, `{"accepts":[…],"emits":[…],"serves":[…]}`; instead of accepts/emits/serves.' }),
  }),
});

const holderArgs = (t: Parameters<Parameters<typeof builder.mutationFields>[0]>[0]) => ({
  seat: t.arg.string({ required: true }),
  machine: t.arg.string({ required: true }),
  module: t.arg.string({ required: true }),
});

builder.mutationFields((t) => ({
  renameSeat: t.field({
    type: SeatRef,
    description: 'Renames a seat: the old name becomes an alias; holdings and aliases follow.',
    authScopes: { admin: true },
    errors: {},
    args: { from: t.arg.string({ required: true }), to: t.arg.string({ required: true }) },
    resolve: (_root, { from, to }, ctx) => renameSeat(ctx.mesh.db, ctx.mesh.catalogue, from, to),
  }),
  holdSeat: t.field({
    type: [HoldingRef],
    description: "Makes one running module the seat's only holder; answers the seat's holdings.",
    authScopes: { admin: true },
    errors: {},
    args: { ...holderArgs(t), scope: t.arg.string() },
    resolve: (_root, args, ctx) => holdSeat(ctx.mesh.db, ctx.mesh.catalogue, args),
  }),
  addSeatHolder: t.field({
    type: [HoldingRef],
    description: 'Adds a holder to a replicated seat beside those on record; idempotent.',
    authScopes: { admin: true },
    errors: {},
    args: { ...holderArgs(t), scope: t.arg.string() },
    resolve: (_root, args, ctx) => addSeatHolder(ctx.mesh.db, ctx.mesh.catalogue, args),
  }),
  releaseSeat: t.field({
    type: [HoldingRef],
    description: "Ends one recorded holding; answers the seat's holdings after it.",
    authScopes: { admin: true },
    errors: {},
    args: holderArgs(t),
    resolve: (_root, args, ctx) => releaseSeat(ctx.mesh.db, ctx.mesh.catalogue, args),
  }),
  defineSeat: t.field({
    type: SeatRef,
    description: 'Creates a seat, or changes the one its name resolves to.',
    authScopes: { admin: true },
    errors: {},
    args: { input: t.arg({ type: SeatInput, required: true }) },
    resolve: (_root, { input }, ctx) => {
      const listed = input.accepts != null || input.emits != null || input.serves != null;
      const protocol = input.protocol ?? (listed ? { accepts: input.accepts ?? [], emits: input.emits ?? [], serves: input.serves ?? [] } : undefined);
      return defineSeat(ctx.mesh.db, ctx.mesh.catalogue, { ...input, protocol });
    },
  }),
}));


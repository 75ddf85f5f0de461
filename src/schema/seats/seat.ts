import { NAME_PAGE_DEFAULT, NAME_PAGE_MAX } from '../../kernel/pages.js';
import { defineSeatBy, renameSeatBy, type SeatChangeBy } from '../../services/controller/seat-changes.js';
import { countSeats, pageSeats, type SeatPageFilter, seatCursor } from '../../services/seats/pages.js';
import { listSeats, type Seat } from '../../services/seats/seats.js';
import { retireSeatVerb } from '../../services/seats/verbs.js';
import { ARG_TYPES, type Verb, type VerbArg } from '../../services/verbs/protocol.js';
import { builder } from '../support/builder.js';
import type { GatewayContext } from '../support/context.js';
import { selected } from '../support/known-loader.js';
import { namePage } from '../support/pages.js';
import { verbMutation } from '../support/verb-mutation.js';

const VerbArgRef = builder.objectRef<VerbArg>('VerbArg').implement({
  description: 'One argument a verb takes.',
  fields: (t) => ({
    name: t.exposeString('name'),
    type: t.exposeString('type', { description: 'String, Int, Float, Boolean, ID, JSON, DateTime, [String] or [[String]].' }),
    required: t.exposeBoolean('required'),
  }),
});

const VerbRef = builder.objectRef<Verb>('Verb').implement({
  description: 'A verb a seat serves on `<subjects>.seat.<seat>.<verb>`.',
  fields: (t) => ({
    name: t.exposeString('name'),
    acting: t.exposeBoolean('acting', { description: 'Whether calling it changes the mesh.' }),
    args: t.field({ type: [VerbArgRef], resolve: (verb) => verb.args }),
  }),
});

// Seat.holders is added in holding.ts, where HoldingRef is, so the two files import one way.
export const SeatRef = builder.objectRef<Seat>('Seat').implement({
  description: 'A role in the mesh that a running module holds: what it delivers and the protocol it speaks.',
  fields: (t) => ({
    name: t.exposeString('name', { description: 'The canonical name; former names are its aliases.' }),
    scope: t.exposeString('scope'),
    delivers: t.exposeString('delivers'),
    decided: t.exposeString('decided', { description: 'The decision that made the seat.' }),
    replicated: t.exposeBoolean('replicated', { description: 'Whether several modules may hold it at once.' }),
    accepts: t.exposeStringList('accepts'),
    emits: t.exposeStringList('emits'),
    serves: t.field({ type: [VerbRef], resolve: (seat) => seat.serves }),
    aliases: t.stringList({ resolve: (seat, _args, ctx) => ctx.loaders.aliasesBySeat.load(seat.name) }),
  }),
});

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

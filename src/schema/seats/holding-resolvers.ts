import { NotFound } from '../../kernel/errors.js';
import { checkName } from '../../kernel/names.js';
import { NAME_PAGE_DEFAULT, NAME_PAGE_MAX } from '../../kernel/pages.js';
import { changeHolderBy } from '../../services/seats/changes.js';
import { type HoldingFilter, listHoldings } from '../../services/seats/holdings.js';
import { countHoldings, holdingCursor, pageHoldings } from '../../services/seats/pages.js';
import { type Db, resolveSeatName } from '../../services/seats/seats.js';
import { builder } from '../support/builder.js';
import { namePage } from '../support/pages.js';
import { HoldingRef } from './holding.js';
import { changeBy, seatChangeArgs } from './seat-resolvers.js';

/** The holdings filter of a `seat` (a name or an alias) and a `machine`; NotFound for a seat no name resolves to. */
async function holdingFilter(db: Db, args: { seat?: string | null; machine?: string | null }): Promise<HoldingFilter> {
  let seats: string[] | undefined;
  if (args.seat != null) {
    const seat = await resolveSeatName(db, checkName(args.seat, 'seat'));
    if (!seat) throw new NotFound('seat', args.seat);
    seats = [seat];
  }
  const machines = args.machine != null ? [checkName(args.machine, 'machine')] : undefined;
  return { seats, machines };
}

builder.queryFields((t) => ({
  holdings: t.field({
    type: [HoldingRef],
    description:
      'Holdings, recorded or derived, of one seat (name or alias), one machine, or all: every item, in one answer (`holdingsConnection` pages them).',
    args: { seat: t.arg.string(), machine: t.arg.string() },
    resolve: async (_root, args, ctx) => listHoldings(ctx.mesh.db, await holdingFilter(ctx.mesh.db, args)),
  }),
  holdingsConnection: t.connection(
    {
      type: HoldingRef,
      description: `Holdings, recorded or derived, by seat, machine and module (code-unit order), ${NAME_PAGE_DEFAULT} a page unless asked, at most ${NAME_PAGE_MAX} (more is an INVALID error, not a shorter page); of one \`seat\` (name or alias) and one \`machine\` when given. Cursors hold the holding's names: valid on any replica and after restarts.`,
      args: { seat: t.arg.string(), machine: t.arg.string() },
      resolve: async (_root, args, ctx) => {
        const filter = await holdingFilter(ctx.mesh.db, args);
        const { connection } = await namePage(
          args,
          holdingCursor,
          (page) => pageHoldings(ctx.mesh.db, filter, page),
          () => countHoldings(ctx.mesh.db, filter),
        );
        return connection;
      },
    },
    {
      name: 'HoldingConnection',
      description: 'A page of holdings, by seat, machine and module.',
      fields: (t) => ({
        totalCount: t.int({ description: 'How many holdings the filters leave, over every page.', resolve: (connection) => connection.totalCount() }),
      }),
    },
    { name: 'HoldingEdge' },
  ),
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

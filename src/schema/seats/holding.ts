import { NotFound } from '../../kernel/errors.js';
import { checkName } from '../../kernel/names.js';
import { NAME_PAGE_DEFAULT, NAME_PAGE_MAX } from '../../kernel/pages.js';
import { changeHolderBy } from '../../services/controller/seat-changes.js';
import type { Machine } from '../../services/machines/machines.js';
import { type Holding, type HoldingFilter, listHoldings } from '../../services/seats/holdings.js';
import { countHoldings, holdingCursor, pageHoldings } from '../../services/seats/pages.js';
import { resolveSeatName } from '../../services/seats/seats.js';
import type { Db } from '../../store/db.js';
import { MACHINE_BRIEF_FIELDS, MachineRef } from '../machines/machine.js';
import { builder } from '../support/builder.js';
import { present, selectsOnly } from '../support/known-loader.js';
import { namePage } from '../support/pages.js';
import { changeBy, SeatRef, seatChangeArgs } from './seat.js';

const HoldingRef = builder.objectRef<Holding>('Holding');

/** The machine of a holding as far as `MACHINE_BRIEF_FIELDS` go; its other fields are never read from it. */
const briefMachine = (holding: Holding): Machine => ({ name: holding.machine, site: holding.site }) as Machine;

HoldingRef.implement({
  description: 'A module on a machine holding a seat.',
  fields: (t) => ({
    seat: t.field({
      type: SeatRef,
      resolve: (holding, _args, ctx) => present(ctx.loaders.seat.get(holding.seat), () => `holding names seat ${holding.seat}, which is gone`),
    }),
    scope: t.exposeString('scope'),
    machine: t.field({
      type: MachineRef,
      // A selection of name and site only is answered by the holding itself, which read the
      // machine's site in its own statement (joined, so the machine existed): no machine read.
      resolve: (holding, _args, ctx, info) =>
        selectsOnly(info.fieldNodes, MACHINE_BRIEF_FIELDS)
          ? briefMachine(holding)
          : present(ctx.loaders.machine.get(holding.machine), () => `holding names machine ${holding.machine}, which is gone`),
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
    resolve: (seat, _args, ctx, info) => ctx.loaders.holdingsBySeat.asks(info.fieldNodes).get(seat.name),
  }),
);

builder.objectField(MachineRef, 'holdings', (t) =>
  t.field({ type: [HoldingRef], resolve: (m, _args, ctx, info) => ctx.loaders.holdingsByMachine.asks(info.fieldNodes).get(m.name) }),
);

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

import type { Machine } from '../../services/machines/machines.js';
import type { Holding } from '../../services/seats/holdings.js';
import { MACHINE_BRIEF_FIELDS, MachineRef } from '../machines/machine.js';
import { builder } from '../support/builder.js';
import { present, selectsOnly } from '../support/known-loader.js';
import { SeatRef } from './seat.js';

export const HoldingRef = builder.objectRef<Holding>('Holding');

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

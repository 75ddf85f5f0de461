import { type Alias, listAliases } from '../../services/seats/seats.js';
import { removeAliasVerb } from '../../services/seats/verbs.js';
import { builder } from '../support/builder.js';
import { verbMutation } from '../support/verb-mutation.js';
import { SeatRef } from './seat.js';

const AliasRef = builder.objectRef<Alias>('Alias').implement({
  description: "A seat's former name, and the seat it resolves to now.",
  fields: (t) => ({
    alias: t.exposeString('alias'),
    seat: t.exposeString('seat'),
  }),
});

builder.queryFields((t) => ({
  aliases: t.field({
    type: [AliasRef],
    description: "Every seat's former names.",
    resolve: (_root, _args, ctx) => listAliases(ctx.mesh.db),
  }),
}));

builder.mutationFields((t) => ({
  removeAlias: t.field({
    type: SeatRef,
    description:
      'Drops a former name of a seat: it no longer resolves. Answers the seat it pointed to; NotFound for a name that is no alias. Leaves a hand-act.',
    ...verbMutation(t, removeAliasVerb),
  }),
}));

import { AliasRef } from '../schema/alias.js';
import { builder } from '../schema/builder.js';
import { listAliases } from '../services/seats/seats.js';

builder.queryFields((t) => ({
  aliases: t.field({
    type: [AliasRef],
    description: "Every seat's former names.",
    resolve: (_root, _args, ctx) => listAliases(ctx.mesh.db),
  }),
}));

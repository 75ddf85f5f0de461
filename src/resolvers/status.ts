import { builder } from '../schema/builder.js';
import { StatusRef } from '../schema/status.js';
import { currentStatus, followLatest } from '../services/status/feed.js';

builder.queryFields((t) => ({
  status: t.field({
    type: StatusRef,
    description: 'The last composition this replica heard, at once: a status is never composed while its caller waits.',
    resolve: (_root, _args, ctx) => currentStatus(ctx.mesh.status),
  }),
}));

builder.subscriptionFields((t) => ({
  status: t.field({
    type: StatusRef,
    description: 'The current composition, then each new one. A slow subscriber skips to the latest instead of queueing.',
    subscribe: (_root, _args, ctx) => followLatest(ctx.mesh.status),
    resolve: (composition) => composition,
  }),
}));

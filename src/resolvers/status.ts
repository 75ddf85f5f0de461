import { GraphQLError } from 'graphql';
import { builder } from '../schema/builder.js';
import { StatusRef } from '../schema/status.js';
import { firstComposition, followLatest } from '../services/status/feed.js';

/** A replica just started may not have heard a composition yet: wait this long for the first, never compose. */
export const STATUS_FIRST_WAIT_MS = 3_000;

builder.queryFields((t) => ({
  status: t.field({
    type: StatusRef,
    description: 'The last composition this replica heard, at once: a status is never composed while its caller waits.',
    resolve: async (_root, _args, ctx) => {
      const composition = await firstComposition(ctx.mesh.status, STATUS_FIRST_WAIT_MS);
      if (!composition) throw new GraphQLError('no status composed yet: the serving replica composes one within seconds of starting', { extensions: { code: 'UNAVAILABLE' } });
      return composition;
    },
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

import type { Composition } from '../../services/status/composition.js';
import { currentStatus, followLatest } from '../../services/status/live/latest.js';
import { judgeEveryMs } from '../../services/status/live/subscription.js';
import { builder } from '../support/builder.js';
import { markSeq } from '../support/status-live.js';
import { StatusRef } from './status.js';

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
    description:
      'The current composition, then each new one. A slow subscriber skips to the latest instead of queueing. `everyMs`: at most one per interval, the latest.',
    args: { everyMs: t.arg.int({ description: 'At most one composition per this many milliseconds (0 to 3,600,000); absent: every one.' }) },
    subscribe: (_root, args, ctx) => {
      const compositions = followLatest(ctx.mesh.status, { everyMs: judgeEveryMs(args.everyMs) });
      const marked: AsyncIterableIterator<Composition> = {
        async next() {
          const step = await compositions.next();
          if (!step.done) markSeq(ctx, step.value.seq);
          return step;
        },
        return: () => compositions.return!(),
        [Symbol.asyncIterator]() {
          return this;
        },
      };
      return marked;
    },
    resolve: (composition) => composition,
  }),
}));

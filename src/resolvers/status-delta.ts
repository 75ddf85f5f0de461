import { builder } from '../schema/builder.js';
import { StatusChangeRef } from '../schema/status-delta.js';
import type { Composition } from '../services/status/composition.js';
import { deltaChange, diffCompositions, fullChange, type StatusChange } from '../services/status/delta.js';
import { followLatest } from '../services/status/feed.js';

// Over graphql-ws the fanout serves this field (one execution per composition for all alike
// subscribers); this subscribe is the path of SSE and of any socket the fanout does not serve.
builder.subscriptionFields((t) => ({
  statusChanges: t.field({
    type: StatusChangeRef,
    description:
      'The current composition whole, then for each new one only what changed since the last one sent to this subscriber (see docs/status-deltas.md). A subscriber that fell behind skips to the latest.',
    subscribe: (_root, _args, ctx) => {
      const compositions = followLatest(ctx.mesh.status);
      let last: Composition | undefined;
      const changes: AsyncIterableIterator<StatusChange> = {
        async next() {
          const step = await compositions.next();
          if (step.done) return { done: true, value: undefined };
          const change = last ? deltaChange(diffCompositions(last, step.value)) : fullChange(step.value);
          last = step.value;
          return { done: false, value: change };
        },
        return: async () => {
          await compositions.return?.();
          return { done: true, value: undefined };
        },
        [Symbol.asyncIterator]() {
          return this;
        },
      };
      return changes;
    },
    resolve: (change) => change as StatusChange,
  }),
}));

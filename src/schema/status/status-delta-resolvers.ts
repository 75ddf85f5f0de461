import { deltaChange, fullChange, type StatusChange } from '../../services/status/delta/delta.js';
import { followLive, judgeEveryMs, liveSeq } from '../../services/status/live/subscription.js';
import { builder } from '../support/builder.js';
import { markSeq, resumeFrom } from '../support/status-live.js';
import { StatusChangeRef } from './status-delta.js';

// Over graphql-ws the fanout serves this field (one execution per composition for all alike
// subscribers); this subscribe is the path of SSE and of any socket the fanout does not serve.
builder.subscriptionFields((t) => ({
  statusChanges: t.field({
    type: StatusChangeRef,
    description:
      'The current composition whole, then for each new one only what changed since the last one sent to this subscriber (see docs/status-deltas.md). A subscriber that fell behind skips to the latest. `after: N` (or SSE `Last-Event-ID: N`) resumes: the deltas after composition N (merged into one message), then live ones; a whole composition first when N is no longer kept. `everyMs`: at most one message per interval, the latest, with the changes of those skipped merged in.',
    args: {
      after: t.arg.int({ description: 'The seq of the composition this subscriber holds (the `seq` of the last message it applied).' }),
      everyMs: t.arg.int({ description: 'At most one message per this many milliseconds (0 to 3,600,000); absent: every composition.' }),
    },
    subscribe: (_root, args, ctx) => {
      const everyMs = judgeEveryMs(args.everyMs);
      const steps = followLive(ctx.mesh.status, { everyMs, changes: true, after: resumeFrom(ctx, args.after) });
      const changes: AsyncIterableIterator<StatusChange> = {
        async next() {
          const step = await steps.next();
          if (step.done) return { done: true, value: undefined };
          markSeq(ctx, liveSeq(step.value));
          const { composition, delta } = step.value;
          return { done: false, value: delta ? deltaChange(delta) : fullChange(composition!) };
        },
        return: async () => {
          await steps.return?.();
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

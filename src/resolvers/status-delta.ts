import { builder } from '../schema/builder.js';
import { StatusChangeRef } from '../schema/status-delta.js';
import type { Composition } from '../services/status/composition.js';
import { deltaChange, diffCompositions, fullChange, type StatusChange } from '../services/status/delta/delta.js';
import { mergeDeltas } from '../services/status/delta/delta-chain.js';
import { followLatest } from '../services/status/live/latest.js';
import { judgeEveryMs, markSeq, resumeFrom } from './status-live.js';

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
      const feed = ctx.mesh.status;
      const after = resumeFrom(ctx, args.after);
      const since = after === undefined ? undefined : feed.changesAfter(after);
      // Resumed: the deltas since `after` first, merged into one, from the composition the subscriber holds.
      const backlog: StatusChange[] = since?.length ? [deltaChange(since.length === 1 ? since[0] : mergeDeltas(since, feed.current()!))] : [];
      let last: Composition | undefined = since ? feed.current() : undefined;
      const compositions = followLatest(feed, { everyMs, fromCurrent: !since });
      const changes: AsyncIterableIterator<StatusChange> = {
        async next() {
          const queued = backlog.shift();
          if (queued) {
            markSeq(ctx, queued.seq);
            return { done: false, value: queued };
          }
          const step = await compositions.next();
          if (step.done) return { done: true, value: undefined };
          const change = last ? deltaChange(diffCompositions(last, step.value)) : fullChange(step.value);
          last = step.value;
          markSeq(ctx, change.seq);
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

import { builder } from './builder.js';

// A supported probe of the live transports (graphql-ws and SSE): it needs no composition, no store
// and no NATS, so a client can tell a broken socket from a mesh with nothing to say.
builder.subscriptionFields((t) => ({
  ticks: t.int({
    description: 'Counts up once every `everyMs` milliseconds, `count` times: a probe that the live transport works.',
    args: { count: t.arg.int({ defaultValue: 3 }), everyMs: t.arg.int({ defaultValue: 100 }) },
    subscribe: async function* (_root, { count, everyMs }) {
      const n = Math.min(Math.max(count ?? 3, 1), 100);
      const wait = Math.min(Math.max(everyMs ?? 100, 10), 10_000);
      for (let i = 1; i <= n; i++) {
        await new Promise((resolve) => setTimeout(resolve, wait));
        yield i;
      }
    },
    resolve: (tick) => tick as number,
  }),
}));

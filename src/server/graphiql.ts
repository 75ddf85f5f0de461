import type { GraphiQLOptions } from 'graphql-yoga';

/**
 * What GraphiQL shows on first open: the mesh at a glance (`status`) and every seat with its
 * holders, so a newcomer's first Run answers something real.
 */
export const GRAPHIQL_DEFAULT_QUERY = `# The mesh as last composed, and every seat's holders.
# Ctrl-Enter runs it; Docs lists every field.
query Mesh {
  status {
    seq
    composedAt
    tookMs
    callsRunning
    handActsThisWeek
    unheldSeats
    machines { name site state lastHeardAt }
    plans { id seat build state tier tiers stopReason }
  }
  seats {
    name
    holders { machine { name } module derived }
  }
}

# Live (README, "Exploring in GraphiQL"):
# subscription { statusChanges { seq full { seq } } }
`;

/**
 * GraphiQL with every script, style and worker inlined (@graphql-yoga/render-graphiql), so the
 * page works on a network that reaches nothing but the gateway. Its module (9 MB of JavaScript,
 * ~150 ms to load) is imported when GraphiQL is first asked for, not at every start; the page is
 * rendered once per options and kept.
 */
export function offlineGraphiQL(): (options: GraphiQLOptions) => Promise<string> {
  const rendered = new Map<string, string>();
  return async (options) => {
    const key = JSON.stringify(options);
    let page = rendered.get(key);
    if (page === undefined) {
      const { renderGraphiQL } = await import('@graphql-yoga/render-graphiql');
      page = renderGraphiQL(options);
      if (rendered.size < 4) rendered.set(key, page);
    }
    return page;
  };
}

import { createHash } from 'node:crypto';
import type { GraphiQLOptions, Plugin } from 'graphql-yoga';

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
 * The Content-Security-Policy of a rendered GraphiQL page, as strict as its inlined assets allow:
 * its inline scripts by hash (nothing else runs), styles inline (Monaco writes its own at run time,
 * which hashes cannot cover), fonts and images from data: URLs, its editor workers from the blob:
 * URLs it makes, and requests to this gateway only ('self' covers its ws: and wss: in CSP 3).
 */
function graphiqlPolicy(page: string): string {
  const hashes = [...page.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => `'sha256-${createHash('sha256').update(m[1]!).digest('base64')}'`);
  return [
    "default-src 'none'",
    `script-src ${hashes.join(' ') || "'none'"}`,
    "style-src 'unsafe-inline'",
    "font-src 'self' data:",
    "img-src 'self' data:",
    'worker-src blob:',
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** A GraphiQL renderer, and the plugin that sends each page it made with its Content-Security-Policy. */
export interface OfflineGraphiQL {
  render(options: GraphiQLOptions): Promise<string>;
  plugin: Plugin;
}

/**
 * GraphiQL with every script, style and worker inlined (@graphql-yoga/render-graphiql), so the
 * page works on a network that reaches nothing but the gateway. Its module (9 MB of JavaScript,
 * ~150 ms to load) is imported when GraphiQL is first asked for, not at every start; the page is
 * rendered once per options and kept, with its policy.
 */
export function offlineGraphiQL(): OfflineGraphiQL {
  const rendered = new Map<string, { page: string; policy: string }>();
  // The gateway renders with one set of options: the policy of the page last rendered is the page's.
  let policy: string | undefined;
  return {
    async render(options) {
      const key = JSON.stringify(options);
      let made = rendered.get(key);
      if (made === undefined) {
        const { renderGraphiQL } = await import('@graphql-yoga/render-graphiql');
        const page = renderGraphiQL(options);
        made = { page, policy: graphiqlPolicy(page) };
        if (rendered.size < 4) rendered.set(key, made);
      }
      policy = made.policy;
      return made.page;
    },
    plugin: {
      // GraphiQL is the only HTML Yoga answers here (the dashboard is served beside it).
      onResponse({ response }) {
        if (policy && response.headers.get('content-type')?.includes('text/html')) response.headers.set('content-security-policy', policy);
      },
    },
  };
}

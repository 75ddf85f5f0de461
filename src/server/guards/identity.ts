import { judgeCaller } from './caller.js';
import type { Guard } from './guard.js';
import { refused } from './refusal.js';

/** Whether a request asks for the GraphiQL page (as Yoga decides it): a GET a browser sends for HTML. */
const asksForGraphiQL = (method: string | undefined, accept: string | undefined): boolean => method === 'GET' && (accept ?? '').includes('text/html');

/**
 * On a gateway with tokens, a request whose token is missing, unknown, refused at its verification
 * or expired is refused before any work: never parsed, validated or counted against a caller. The
 * GraphiQL page and a CORS preflight pass without one (a browser cannot send it there).
 */
export const callerGuard: Guard = {
  name: 'caller',
  stage: 'caller',
  at: {
    POST: true,
    GET: true,
    'status fast path': true,
    multipart: true,
    SSE: true,
    'graphql-ws connect': true,
    'graphql-ws subscribe': 'its socket was judged at connection_init; liveAuth closes it 4403 at its expiry or revocation',
  },
  judge({ method, accept, authorization, admission }, env) {
    if (env.access.open || asksForGraphiQL(method, accept) || method === 'OPTIONS') return undefined;
    const { refusal } = judgeCaller(env.access, authorization, admission);
    return refusal === undefined ? undefined : refused('caller', 401, 'FORBIDDEN', refusal, { headers: { 'www-authenticate': 'Bearer' } });
  },
};

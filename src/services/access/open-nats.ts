import type { Bus } from '../../bus/nats.js';
import type { Config } from '../../config.js';

/** What the gateway says when its HTTP doors need a token and its NATS lets anyone in (log, `/ready`, docs/access.md). */
export const NATS_OPEN_WARNING =
  'the HTTP doors require tokens but the NATS server accepts any client (auth_required false): anyone who reaches NATS may read the calls subjects, call reading verbs and act as any NATS user it names; run the shipped account (docs/nats-account.conf)';

/**
 * Whether the HTTP doors are closed (MESH_TOKENS_FILE, or a JWKS) while the NATS server this
 * replica is on asks no client to authenticate: the doors' scopes then hold only for callers who
 * come through them. Forwarded calls stay proven (the replica key); everything else on NATS is open.
 */
export function natsOpenBehindClosedDoors(config: Pick<Config, 'tokensFile' | 'jwt'>, bus: Pick<Bus, 'authRequired'>): boolean {
  return Boolean(config.tokensFile || config.jwt) && !bus.authRequired();
}

import { readFileSync, type Stats, unwatchFile, watchFile } from 'node:fs';
import { createLocalJWKSet, createRemoteJWKSet, errors, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from 'jose';
import type { Logger } from 'pino';
import { Invalid } from '../../kernel/errors.js';
import { CALLER_NAME_RULE, type Caller, isCallerName, SCOPES, type Scope } from './caller.js';

/** How often MESH_JWKS_FILE's stat is polled: a rotated key is taken within about this long. */
const JWKS_POLL_MS = 1_000;
/**
 * MESH_JWKS_URL is fetched again for a key id it does not hold, at most this often: a flood of
 * made-up key ids costs the identity provider one request per this long, not one per token.
 */
const JWKS_REFETCH_COOLDOWN_MS = 2_000;
/** The keys of MESH_JWKS_URL are fetched again after this long even without an unknown key id. */
const JWKS_CACHE_MAX_AGE_MS = 10 * 60_000;

export interface JwtSettings {
  jwksFile: string | undefined;
  jwksUrl: string | undefined;
  issuer: string;
  audience: string;
  scopesClaim: string;
  /** How far `nbf`, `iat` and `exp` may be off this clock, in seconds (MESH_JWT_CLOCK_TOLERANCE_S); unset, JWT_CLOCK_TOLERANCE_S. */
  clockToleranceS?: number;
}

/** The clock tolerance when the settings give none: as MESH_JWT_CLOCK_TOLERANCE_S's default (src/config.ts). */
const JWT_CLOCK_TOLERANCE_S = 30;

/** A verified token's caller and when it stops being one, or why it is refused. */
export type JwtVerdict = { caller: Caller; expiresAt: number } | { refusal: string };

export interface JwtVerifier {
  /** Verifies the signature (against the JWKS), issuer, audience and expiry; never rejects. */
  verify(token: string): Promise<JwtVerdict>;
  /** Calls `listener` after MESH_JWKS_FILE was re-read; returns its removal. */
  onKeysChanged(listener: () => void): () => void;
  stop(): void;
}

/** A bearer that has the shape of a JWS compact serialization (three base64url parts). */
export const looksLikeJwt = (token: string): boolean => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);

function readJwks(file: string): JSONWebKeySet {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as JSONWebKeySet;
    if (!Array.isArray(parsed?.keys)) throw new Error('it has no "keys" array');
    return parsed;
  } catch (error) {
    throw new Invalid(`MESH_JWKS_FILE ${file}: ${(error as Error).message}`);
  }
}

/** The scopes a token grants: a space-separated string (OAuth 2's `scope`) or an array; names that are not ours are ignored. */
function scopesOf(claim: unknown): Set<Scope> {
  const names = typeof claim === 'string' ? claim.split(/\s+/) : Array.isArray(claim) ? claim.filter((s): s is string => typeof s === 'string') : [];
  return new Set(SCOPES.filter((scope) => names.includes(scope)));
}

/** Why jose refused a token, in words that name what was wrong. */
function refusalOf(error: unknown, settings: JwtSettings): string {
  if (error instanceof errors.JWTExpired) {
    const exp = (error.payload as JWTPayload).exp;
    return `the token expired${typeof exp === 'number' ? ` at ${new Date(exp * 1000).toISOString()}` : ''}`;
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'iss') return `the token's issuer is not ${settings.issuer}`;
    if (error.claim === 'aud') return `the token's audience is not ${settings.audience}`;
    if (error.reason === 'missing') return `the token has no "${error.claim}" claim`;
    return `the token's "${error.claim}" claim is not valid now`;
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) return "the token's signature does not verify";
  if (error instanceof errors.JWKSNoMatchingKey) return "the token's signing key is not in the JWKS";
  if (error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported) return "the token's algorithm is not accepted";
  if (error instanceof errors.JWTInvalid || error instanceof errors.JWSInvalid) return 'the token is not a valid JWT';
  if (error instanceof errors.JWKSTimeout) return 'the JWKS could not be fetched in time';
  return `the token could not be verified: ${error instanceof Error ? error.message : String(error)}`;
}

/**
 * Verifies JWTs with jose against MESH_JWKS_FILE (read now, re-read whenever it changes; a file
 * that does not parse keeps the keys last read) or MESH_JWKS_URL (fetched when first needed,
 * cached, fetched again for an unknown key id). A token must carry the configured issuer and
 * audience, `sub` (the caller's name) and `exp`; its scopes come from `scopesClaim`.
 * Throws Invalid at start when MESH_JWKS_FILE cannot be read.
 */
export function startJwtVerifier(settings: JwtSettings, logger: Logger, pollMs = JWKS_POLL_MS): JwtVerifier {
  const listeners = new Set<() => void>();
  let keys: JWTVerifyGetKey;
  let stopWatch: () => void = () => undefined;
  if (settings.jwksFile) {
    const file = settings.jwksFile;
    keys = createLocalJWKSet(readJwks(file));
    const onChange = (current: Stats) => {
      if (current.mtimeMs === 0 && current.ino === 0) {
        logger.error({ jwksFile: file }, 'the JWKS file is gone: keeping the keys last read');
        return;
      }
      try {
        keys = createLocalJWKSet(readJwks(file));
      } catch (error) {
        logger.error({ err: String(error), jwksFile: file }, 'the JWKS file does not parse: keeping the keys last read');
        return;
      }
      logger.info({ jwksFile: file }, 'JWKS file re-read');
      for (const listener of listeners) listener();
    };
    watchFile(file, { interval: pollMs, persistent: false }, onChange);
    stopWatch = () => unwatchFile(file, onChange);
  } else {
    keys = createRemoteJWKSet(new URL(settings.jwksUrl as string), {
      cooldownDuration: JWKS_REFETCH_COOLDOWN_MS,
      cacheMaxAge: JWKS_CACHE_MAX_AGE_MS,
    });
  }
  return {
    async verify(token) {
      try {
        const { payload } = await jwtVerify(token, (header, input) => keys(header, input), {
          issuer: settings.issuer,
          audience: settings.audience,
          requiredClaims: ['sub', 'exp'],
          clockTolerance: settings.clockToleranceS ?? JWT_CLOCK_TOLERANCE_S,
        });
        const name = payload.sub;
        if (!isCallerName(name)) return { refusal: `the token's "sub" must be ${CALLER_NAME_RULE}` };
        return { caller: { name, scopes: scopesOf(payload[settings.scopesClaim]) }, expiresAt: (payload.exp as number) * 1000 };
      } catch (error) {
        return { refusal: refusalOf(error, settings) };
      }
    },
    onKeysChanged(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    stop: () => stopWatch(),
  };
}

import { timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { z } from 'zod';
import { Forbidden, Invalid } from '../../kernel/errors.js';
import { isName, NAME_RULE } from '../../kernel/names.js';
import { type Caller, SCOPES, type Scope } from './caller.js';
import { type JwtVerdict, type JwtVerifier, looksLikeJwt } from './jwt.js';
import { hashToken } from './token-hash.js';
import { watchFileToReload } from './watched-file.js';

/** Everyone is this caller when no tokens are configured (the gateway then listens on loopback only). */
const LOCAL_CALLER: Caller = { name: 'local', scopes: new Set<Scope>(SCOPES) };

/**
 * How often the tokens file's stat is polled: a revoked token is refused within about this long.
 * Polling the path (not fs.watch on an inode) survives editors that replace the file by rename.
 */
export const TOKENS_POLL_MS = 1_000;

const tokensFileSchema = z.object({
  tokens: z
    .array(
      z.object({
        name: z.string().refine(isName, NAME_RULE),
        scopes: z.array(z.enum(SCOPES)),
        sha256: z.string().regex(/^[0-9a-f]{64}$/, 'the hex SHA-256 of the token'),
      }),
    )
    .min(1),
});

export interface Access {
  /** The caller a request's Authorization header names, from the tokens as last read; Forbidden, with the reason, when it names none. */
  callerFor(authorization: string | null | undefined): Caller;
  /**
   * Does the slow part of judging an Authorization (a JWT's signature against the JWKS), after
   * which `callerFor` answers it at once; undefined when there is nothing to wait for. Resolves
   * with the refusal's reason when the JWT is refused (a refusal is kept nowhere: `callerFor`
   * then says only that it was not verified), undefined when it is good. Never rejects.
   */
  admit(authorization: string | null | undefined): Promise<string | undefined> | undefined;
  /**
   * The caller `authorization` names now, a JWT whose verdict is not kept (evicted, or dropped at a
   * key change) verified again: a good token is never taken for a revoked one for want of a cache
   * entry. Rejects Forbidden, with the reason, when it names none.
   */
  callerNow(authorization: string | null | undefined): Promise<Caller>;
  /** When the caller `authorization` names stops being one (a JWT's `exp`), in epoch ms; undefined when never. */
  expiresAt(authorization: string | null | undefined): number | undefined;
  readonly open: boolean;
  /** Calls `listener` each time the tokens file or the JWKS file has been re-read successfully; returns its removal. */
  onReload(listener: () => void): () => void;
}

/** An Access over a tokens file, which `reload` re-reads. */
interface FileAccess extends Access {
  readonly tokensFile: string;
  /** Re-reads the file; on a file that does not parse throws Invalid and keeps the tokens it had. */
  reload(): void;
}

/**
 * Good verdicts on JWTs kept between `admit` and `callerFor`, and for the next request with the
 * same token; the least recently admitted goes first. Only verified tokens get in (a refusal is
 * never kept), keyed by the token's SHA-256: at most this many entries of about 200 bytes each.
 */
export const JWT_VERDICTS_KEPT = 10_000;
/**
 * A bearer longer than this is refused unread (neither hashed nor verified): an identity
 * provider's JWT is 1 to 2 KiB, a tokens file's token 32 bytes, and a socket's connection_init
 * may carry a megabyte.
 */
export const BEARER_MAX_BYTES = 8 * 1024;

type Entry = { hash: Buffer; caller: Caller };

function readTokens(tokensFile: string): Entry[] {
  let parsed;
  try {
    parsed = tokensFileSchema.parse(JSON.parse(readFileSync(tokensFile, 'utf8')));
  } catch (error) {
    throw new Invalid(`MESH_TOKENS_FILE ${tokensFile}: ${(error as Error).message}`);
  }
  return parsed.tokens.map((t) => ({ hash: Buffer.from(t.sha256, 'hex'), caller: { name: t.name, scopes: new Set(t.scopes) } }));
}

/** `Bearer` and the blanks after it, as many as an Authorization header reasonably carries. */
const BEARER_PREFIX_MAX = 16;
/** The bearer of an Authorization header; undefined when there is none, or it is longer than BEARER_MAX_BYTES (judged by characters first, never scanned). */
const bearerOf = (authorization: string | null | undefined): string | undefined => {
  if (typeof authorization !== 'string' || authorization.length > BEARER_MAX_BYTES + BEARER_PREFIX_MAX) return undefined;
  const bearer = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1];
  return bearer !== undefined && Buffer.byteLength(bearer) <= BEARER_MAX_BYTES ? bearer : undefined;
};
const OVERSIZED = `the bearer token is longer than ${BEARER_MAX_BYTES} bytes`;
/** Why an Authorization names no bearer: none given, or one too long to read. */
const noBearerReason = (authorization: string | null | undefined): string =>
  typeof authorization === 'string' && authorization.length > BEARER_PREFIX_MAX && /^Bearer\s/i.test(authorization)
    ? OVERSIZED
    : 'an Authorization: Bearer <token> header is required';

/**
 * Reads MESH_TOKENS_FILE (`{"tokens":[{"name","scopes","sha256"}]}`: hashes, never tokens) and,
 * with `jwt`, takes JWTs beside it: a bearer shaped like a JWT is verified against the JWKS, any
 * other is looked up in the file. Without either, every caller is `local` with every scope.
 */
export function loadAccess(tokensFile: string | undefined, jwt?: JwtVerifier): Access {
  if (!tokensFile && !jwt)
    return {
      open: true,
      callerFor: () => LOCAL_CALLER,
      admit: () => undefined,
      callerNow: async () => LOCAL_CALLER,
      expiresAt: () => undefined,
      onReload: () => () => undefined,
    };
  let entries = tokensFile ? readTokens(tokensFile) : [];
  const listeners = new Set<() => void>();
  const fire = () => {
    for (const listener of listeners) listener();
  };
  /** Each good JWT's verdict by the token's SHA-256; a Map keeps insertion order, and a hit is moved last, so the least recently used goes first. */
  const verdicts = new Map<string, Extract<JwtVerdict, { caller: Caller }>>();
  // The same token is looked up several times per request (admission, log, rate, context): its hash is kept for the next look-up.
  let last = { token: '', key: '' };
  const keyOf = (token: string) => {
    if (token !== last.token) last = { token, key: hashToken(token) };
    return last.key;
  };
  const judge = async (token: string, key: string): Promise<string | undefined> => {
    const verdict = await (jwt as JwtVerifier).verify(token);
    if ('refusal' in verdict) return verdict.refusal;
    verdicts.delete(key);
    if (verdicts.size >= JWT_VERDICTS_KEPT) verdicts.delete(verdicts.keys().next().value as string);
    verdicts.set(key, verdict);
    return undefined;
  };
  // New keys may refuse what old ones took: every verdict goes, and each token is verified again at
  // its next use (a socket's or an SSE stream's at once, by callerNow in their reload listeners).
  jwt?.onKeysChanged(() => {
    verdicts.clear();
    fire();
  });
  const isJwt = (token: string) => jwt !== undefined && looksLikeJwt(token);
  const access: Access & Partial<FileAccess> = {
    open: false,
    tokensFile,
    callerFor(authorization) {
      const token = bearerOf(authorization);
      if (!token) throw new Forbidden(noBearerReason(authorization));
      if (isJwt(token)) {
        const verdict = verdicts.get(keyOf(token));
        if (!verdict) throw new Forbidden('the token was not verified');
        if (verdict.expiresAt <= Date.now()) throw new Forbidden(`the token expired at ${new Date(verdict.expiresAt).toISOString()}`);
        return verdict.caller;
      }
      if (!tokensFile) throw new Forbidden('the token is not a JWT, and only JWTs are taken here');
      const hash = Buffer.from(hashToken(token), 'hex');
      const entry = entries.find((e) => timingSafeEqual(e.hash, hash));
      if (!entry) throw new Forbidden('the token is not known');
      return entry.caller;
    },
    admit(authorization) {
      const token = bearerOf(authorization);
      if (!token || !isJwt(token)) return undefined;
      const key = keyOf(token);
      const verdict = verdicts.get(key);
      if (!verdict) return judge(token, key);
      // Used again: the last to go.
      verdicts.delete(key);
      verdicts.set(key, verdict);
      return undefined;
    },
    async callerNow(authorization) {
      const refusal = await access.admit(authorization);
      if (refusal !== undefined) throw new Forbidden(refusal);
      return access.callerFor(authorization);
    },
    expiresAt(authorization) {
      const token = bearerOf(authorization);
      const verdict = token === undefined || !isJwt(token) ? undefined : verdicts.get(keyOf(token));
      return verdict?.expiresAt;
    },
    onReload(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  if (tokensFile) {
    access.reload = () => {
      entries = readTokens(tokensFile);
      fire();
    };
  }
  return access;
}

/** True when `next` is missing a scope `previous` had: a socket opened as `previous` must close. */
export function scopesShrank(previous: Caller, next: Caller): boolean {
  return previous.name !== next.name || [...previous.scopes].some((scope) => !next.scopes.has(scope));
}

/**
 * Re-reads the tokens file whenever its stat changes (polled every `intervalMs`). A file that is
 * missing or does not parse keeps the last good tokens, logged at error: a half-written or
 * mistyped file neither opens the gateway nor locks everyone out. No-op on an open gateway.
 */
export function watchTokensFile(access: Access, logger: Logger, intervalMs = TOKENS_POLL_MS): { stop(): void } {
  if (!('reload' in access)) return { stop: () => undefined };
  const file = access as FileAccess;
  return watchFileToReload(file.tokensFile, () => file.reload(), logger, { file: 'tokens file', kept: 'tokens' }, intervalMs);
}

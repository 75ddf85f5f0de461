import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { z } from 'zod';
import { Forbidden, Invalid } from '../../kernel/errors.js';
import { isName, NAME_RULE } from '../../kernel/names.js';
import { type Caller, SCOPES, type Scope } from './caller.js';
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
  /** The caller a request's Authorization header names, from the tokens as last read; Forbidden when it names none. */
  callerFor(authorization: string | null | undefined): Caller;
  readonly open: boolean;
  /** Calls `listener` each time the tokens file has been re-read successfully; returns its removal. */
  onReload(listener: () => void): () => void;
}

/** An Access over a tokens file, which `reload` re-reads. */
interface FileAccess extends Access {
  readonly tokensFile: string;
  /** Re-reads the file; on a file that does not parse throws Invalid and keeps the tokens it had. */
  reload(): void;
}

export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

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

/**
 * Reads MESH_TOKENS_FILE (`{"tokens":[{"name","scopes","sha256"}]}`: hashes, never tokens).
 * Without a file, every caller is `local` with every scope.
 */
export function loadAccess(tokensFile: string | undefined): Access {
  if (!tokensFile) return { open: true, callerFor: () => LOCAL_CALLER, onReload: () => () => undefined };
  let entries = readTokens(tokensFile);
  const listeners = new Set<() => void>();
  const access: FileAccess = {
    open: false,
    tokensFile,
    callerFor(authorization) {
      const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
      if (!token) throw new Forbidden('an Authorization: Bearer <token> header is required');
      const hash = Buffer.from(hashToken(token), 'hex');
      const entry = entries.find((e) => timingSafeEqual(e.hash, hash));
      if (!entry) throw new Forbidden('the token is not known');
      return entry.caller;
    },
    onReload(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    reload() {
      entries = readTokens(tokensFile);
      for (const listener of listeners) listener();
    },
  };
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

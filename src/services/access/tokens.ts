import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { Forbidden, Invalid } from '../../kernel/errors.js';
import { isName, NAME_RULE } from '../../kernel/names.js';
import { type Caller, SCOPES, type Scope } from './caller.js';

/** Everyone is this caller when no tokens are configured (the gateway then listens on loopback only). */
const LOCAL_CALLER: Caller = { name: 'local', scopes: new Set<Scope>(SCOPES) };

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
  /** The caller a request's Authorization header names; Forbidden when it names none. */
  callerFor(authorization: string | null | undefined): Caller;
  readonly open: boolean;
}

export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

/**
 * Reads MESH_TOKENS_FILE (`{"tokens":[{"name","scopes","sha256"}]}`: hashes, never tokens).
 * Without a file, every caller is `local` with every scope.
 */
export function loadAccess(tokensFile: string | undefined): Access {
  if (!tokensFile) return { open: true, callerFor: () => LOCAL_CALLER };
  let parsed;
  try {
    parsed = tokensFileSchema.parse(JSON.parse(readFileSync(tokensFile, 'utf8')));
  } catch (error) {
    throw new Invalid(`MESH_TOKENS_FILE ${tokensFile}: ${(error as Error).message}`);
  }
  const entries = parsed.tokens.map((t) => ({ hash: Buffer.from(t.sha256, 'hex'), caller: { name: t.name, scopes: new Set(t.scopes) } }));
  return {
    open: false,
    callerFor(authorization) {
      const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
      if (!token) throw new Forbidden('an Authorization: Bearer <token> header is required');
      const hash = Buffer.from(hashToken(token), 'hex');
      const entry = entries.find((e) => timingSafeEqual(e.hash, hash));
      if (!entry) throw new Forbidden('the token is not known');
      return entry.caller;
    },
  };
}

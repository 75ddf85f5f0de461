import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { z } from 'zod';
import { Invalid } from '../../kernel/errors.js';
import { isName, NAME_RULE } from '../../kernel/names.js';
import { SCOPES, type Scope } from './caller.js';
import { TOKENS_POLL_MS } from './tokens.js';
import { watchFileToReload } from './watched-file.js';

/**
 * A NATS user's scopes without MESH_NATS_USERS_FILE: reading and acting, as the seed's controller
 * let every NATS client do, and never `admin` (seat and machine changes need a token or a listed user).
 */
export const NATS_DEFAULT_SCOPES: ReadonlySet<Scope> = new Set<Scope>(['read', 'act']);
const NO_SCOPES: ReadonlySet<Scope> = new Set<Scope>();

const usersFileSchema = z.object({
  users: z.array(z.object({ name: z.string().refine(isName, NAME_RULE), scopes: z.array(z.enum(SCOPES)) })),
});

/** The scopes of the NATS users that call the controller's verbs, by user name (the last token of a named subject). */
export interface NatsUsers {
  scopesOf(user: string): ReadonlySet<Scope>;
  /** The file they come from; undefined: every user has NATS_DEFAULT_SCOPES. */
  readonly file: string | undefined;
  /** Re-reads the file; on one that does not parse throws Invalid and keeps the users it had. */
  reload(): void;
}

function readUsers(file: string): Map<string, ReadonlySet<Scope>> {
  let parsed;
  try {
    parsed = usersFileSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
  } catch (error) {
    throw new Invalid(`MESH_NATS_USERS_FILE ${file}: ${(error as Error).message}`);
  }
  return new Map(parsed.users.map((user) => [user.name, new Set(user.scopes)]));
}

/**
 * Reads MESH_NATS_USERS_FILE (`{"users":[{"name":"alice","scopes":["read","act"]}]}`): with it, a
 * user not listed has no scope at all; without it, every user has NATS_DEFAULT_SCOPES.
 */
export function loadNatsUsers(file: string | undefined): NatsUsers {
  if (!file) return { file, scopesOf: () => NATS_DEFAULT_SCOPES, reload: () => undefined };
  let users = readUsers(file);
  return {
    file,
    scopesOf: (user) => users.get(user) ?? NO_SCOPES,
    reload() {
      users = readUsers(file);
    },
  };
}

/** Re-reads MESH_NATS_USERS_FILE when it changes, as the tokens file is (a bad edit keeps the users last read). No-op without a file. */
export function watchNatsUsersFile(users: NatsUsers, logger: Logger, intervalMs = TOKENS_POLL_MS): { stop(): void } {
  if (!users.file) return { stop: () => undefined };
  return watchFileToReload(users.file, () => users.reload(), logger, { file: 'NATS users file', kept: 'users' }, intervalMs);
}

/** What a caller may do: read the mesh, act on it (acting verbs, callVerb), change seats. */
export type Scope = 'read' | 'act' | 'admin';

export const SCOPES = ['read', 'act', 'admin'] as const satisfies readonly Scope[];

/** Who is asking: a token's name and scopes, or `local` with every scope when no tokens are set. */
export interface Caller {
  name: string;
  scopes: ReadonlySet<Scope>;
}

/** A caller's name is stored in calls and hand-acts as it is: at most this many characters. */
const CALLER_NAME_MAX = 200;

/** What the caller-name rule says, for messages that refuse one. */
export const CALLER_NAME_RULE = `1 to ${CALLER_NAME_MAX} printable characters`;

/**
 * Whether a value may name a caller: 1 to CALLER_NAME_MAX characters, none a control character.
 * Wider than a mesh name (src/kernel/names.ts): a JWT's `sub` (`alice@example.com`) is a caller as
 * it is, never replaced by another name; mesh names (tokens, NATS users) are callers too.
 */
export const isCallerName = (value: unknown): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= CALLER_NAME_MAX && !/\p{Cc}/u.test(value);

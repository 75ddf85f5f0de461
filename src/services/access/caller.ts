/** What a caller may do: read the mesh, act on it (acting verbs, callVerb), change seats. */
export type Scope = 'read' | 'act' | 'admin';

export const SCOPES = ['read', 'act', 'admin'] as const satisfies readonly Scope[];

/** Who is asking: a token's name and scopes, or `local` with every scope when no tokens are set. */
export interface Caller {
  name: string;
  scopes: ReadonlySet<Scope>;
}

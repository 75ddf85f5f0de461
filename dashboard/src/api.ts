import type { TypedDocumentString } from './generated/graphql.js';

/** The token the person gave, kept for this browser tab only (sessionStorage), never in the page's address or storage that outlives the tab. */
const TOKEN_KEY = 'mesh-gateway.token';

export const token = {
  get: (): string | undefined => sessionStorage.getItem(TOKEN_KEY) ?? undefined,
  set: (value: string) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

export class Refused extends Error {}

/** Runs a query (a generated document, dashboard/src/operations/) over HTTP with the token; throws Refused on a 401 (no token, or one refused). */
export async function query<T, V>(endpoint: string, document: TypedDocumentString<T, V>, variables?: V): Promise<T> {
  const bearer = token.get();
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
    body: JSON.stringify({ query: document.toString(), variables: variables ?? {} }),
  });
  if (response.status === 401) {
    // The gateway's reason (`the token expired at …`), when its answer carries one.
    const refusal = (await response.json().catch(() => undefined)) as { errors?: { message?: string }[] } | undefined;
    throw new Refused(refusal?.errors?.[0]?.message ?? '');
  }
  const body = (await response.json()) as { data?: T; errors?: { message: string }[] };
  if (!body.data) throw new Error(body.errors?.[0]?.message ?? `HTTP ${response.status}`);
  return body.data;
}

import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
// The printer alone, not graphql's index (every module of graphql-js): meshctl starts in half the time.
import { print } from 'graphql/language/printer.js';

/** The gateway could not be reached at all: meshctl exits 3 naming the URL it tried. */
export class Unreachable extends Error {
  override name = 'Unreachable';
  constructor(
    readonly url: string,
    cause: unknown,
  ) {
    super(`could not reach the gateway at ${url}: ${(cause as Error)?.message ?? String(cause)}`);
  }
}

/** The gateway answered, with an error: a refused request, a GraphQL error, or a typed error as data. */
export class Refused extends Error {
  override name = 'Refused';
  constructor(
    readonly code: string,
    message: string,
    /** The response's `data`, when there was one (printed with --json). */
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** graphql-ws's Forbidden: the gateway refused the token of connection_init. */
const FORBIDDEN = 4403;

/** How long one request may take before meshctl gives up on it. */
const REQUEST_TIMEOUT_MS = 30_000;

interface Response<T> {
  data?: T;
  errors?: { message: string; extensions?: { code?: string } }[];
}

/** A client of one gateway, as a tool is: HTTP for queries and mutations, graphql-ws for subscriptions. */
export class GatewayClient {
  /** `token` is a token, or where to read one each time it is presented (MESH_TOKEN_FILE, which a sign-in agent refreshes). */
  constructor(
    readonly url: string,
    token: string | (() => string | undefined) | undefined,
  ) {
    this.token = typeof token === 'function' ? token : () => token;
  }

  private readonly token: () => string | undefined;

  private headers(): Record<string, string> {
    const token = this.token();
    return {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json, application/json',
      ...(token && { authorization: `Bearer ${token}` }),
    };
  }

  /** Runs one typed operation; throws Unreachable, or Refused for an HTTP refusal or GraphQL errors. */
  async request<T, V extends Record<string, unknown>>(document: TypedDocumentNode<T, V>, variables?: V): Promise<T> {
    let response: globalThis.Response;
    try {
      response = await fetch(this.url, {
        method: 'POST',
        headers: this.headers(),
        body: JSON.stringify({ query: print(document), variables }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw new Unreachable(this.url, (error as { cause?: unknown }).cause ?? error);
    }
    let body: Response<T>;
    try {
      body = (await response.json()) as Response<T>;
    } catch {
      throw new Refused(`HTTP_${response.status}`, `the gateway answered HTTP ${response.status} without a GraphQL response`);
    }
    const first = body.errors?.[0];
    if (first) throw new Refused(first.extensions?.code ?? (response.status === 401 ? 'FORBIDDEN' : 'ERROR'), first.message, body.data);
    if (!body.data) throw new Refused(`HTTP_${response.status}`, `the gateway answered HTTP ${response.status} without data`);
    return body.data;
  }

  /**
   * Subscribes over graphql-ws; `onNext` gets each payload's data. Resolves when the subscription
   * ends. `variables` is asked again at each (re)subscription, so a reconnect can resume where the
   * last message left off.
   */
  async subscribe<T, V extends Record<string, unknown> = Record<string, never>>(
    document: TypedDocumentNode<T, V>,
    onNext: (data: T) => void,
    signal: AbortSignal,
    variables?: () => V,
  ): Promise<void> {
    // The token presented at the last connection_init: refused (4403, an expired JWT say), the
    // socket is opened again only once the token changed, else meshctl ends with the reason.
    let presented: string | undefined;
    // Loaded here, not at the top: only --watch and --follow subscribe, and every run would pay for them.
    const [{ createClient }, { default: WebSocket }] = await Promise.all([import('graphql-ws'), import('ws')]);
    const client = createClient({
      url: this.url.replace(/^http/, 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: () => {
        presented = this.token();
        return presented ? { Authorization: `Bearer ${presented}` } : {};
      },
      retryAttempts: Number.POSITIVE_INFINITY,
      shouldRetry: (event) => !signal.aborted && !((event as { code?: number })?.code === FORBIDDEN && this.token() === presented),
    });
    return new Promise<void>((resolve, reject) => {
      const stop = client.subscribe<T>(
        {
          query: print(document),
          // A getter: graphql-ws serializes the payload again at every (re)subscription.
          get variables() {
            return variables?.();
          },
        },
        {
          next: (result) => {
            if (result.errors?.[0]) {
              // The subscription ends with its error: its socket too, so a caller may subscribe again.
              stop();
              void client.dispose();
              reject(new Refused(String(result.errors[0].extensions?.code ?? 'ERROR'), result.errors[0].message));
            } else if (result.data) onNext(result.data as T);
          },
          error: (error) => reject(error instanceof Error ? new Unreachable(this.url, error) : new Refused('CLOSED', closeReason(error))),
          complete: () => resolve(),
        },
      );
      signal.addEventListener('abort', () => {
        stop();
        void client.dispose();
        resolve();
      });
    });
  }
}

const closeReason = (event: unknown): string => {
  const e = event as { code?: number; reason?: string };
  return `the gateway closed the subscription (${e.code ?? '?'}${e.reason ? `: ${e.reason}` : ''})`;
};

/** A typed error as data (the errors plugin's union member), or undefined for a success. */
export function errorAsData(result: { __typename: string; code?: string; message?: string }): Refused | undefined {
  return result.__typename.endsWith('Error') ? new Refused(result.code ?? 'ERROR', result.message ?? result.__typename) : undefined;
}

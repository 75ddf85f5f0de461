import { type DocumentNode, type ExecutionResult, getOperationAST, Kind } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Caller } from '../services/access/caller.js';
import type { StatusFeed } from '../services/status/composition.js';
import { operationKey } from './operation-key.js';

/** Distinct (operation, variables, caller) responses kept for one composition: dashboards ask a handful. */
const STATUS_CACHE_ENTRIES = 64;
/** Bytes kept for one composition, whatever the entries: a 1,000-machine status is about 150 KB. */
const STATUS_CACHE_BYTES = 64 * 1024 * 1024;

/** How long a request waits for the same request's execution before executing itself. */
const MISS_WAIT_MS = 5_000;

const KNOWN_PARAMS = new Set(['query', 'variables', 'operationName', 'extensions']);
const REGULAR_MEDIA_TYPES = ['application/graphql-response+json', 'application/json'];

interface Entry {
  /** The serialized response, or undefined for an operation that is not served from the cache. */
  bytes: Buffer | undefined;
}

interface Pending {
  key: string;
  seq: number;
  cacheable: boolean;
  settle(entry: Entry): void;
}

export interface StatusQueryCacheOptions {
  feed: StatusFeed;
  /** The caller an Authorization names, or nothing (src/server/guards/caller.ts): a request naming none is the ordinary path's to refuse. */
  callerOf(authorization: string | null | undefined): Caller | undefined;
  /** Root query fields answered from the composition alone. */
  fields: readonly string[];
}

export interface StatusQueryCache {
  plugin: Plugin;
  /**
   * The kept response for `params` asked with `authorization`, when there is one for the current
   * composition (the same lookup as the plugin's request parser); counts nothing (see `hit`).
   */
  kept(params: { query?: unknown; operationName?: unknown; variables?: unknown }, authorization: string | null | undefined): Buffer | undefined;
  /** Counts one request answered with a kept response outside the plugin. */
  hit(): void;
  stats(): { hits: number; misses: number; entries: number; bytes: number };
  /** Whether no response is kept (asked at every request before Yoga: no counters copied for it). */
  keepsNone(): boolean;
}

/** The media type Yoga's regular result processor would answer a request's `Accept` with, or undefined when another one would answer. */
export function regularMediaType(accept: string | null | undefined): string | undefined {
  const accepts = (accept || '*/*').replace(/\s/g, '').toLowerCase().split(',');
  let chosen: string | undefined;
  for (const accept of accepts.reverse()) {
    const [mediaType, ...params] = accept.split(';');
    const charset = params.find((p) => p.includes('charset=')) ?? 'charset=utf-8';
    if (charset !== 'charset=utf-8' || !mediaType) continue;
    const [askedPre, askedSuf] = mediaType.split('/');
    for (const type of REGULAR_MEDIA_TYPES) {
      const [pre, suf] = type.split('/');
      if ((askedPre === '*' || askedPre === pre) && (askedSuf === '*' || askedSuf === suf)) chosen = type;
    }
  }
  return chosen;
}

/**
 * A Yoga plugin answering queries of the composition (only `fields` and `__typename` at the root)
 * from bytes serialized once per (composition, operation, variables, caller): the first request
 * after a composition executes as usual (others asking the same wait for it) and its response,
 * when it has no errors, is kept and written as it is until the next composition. A kept
 * response is answered from the request parser, before any other hook runs.
 */
export function statusQueryCache({ feed, callerOf, fields }: StatusQueryCacheOptions): StatusQueryCache {
  const kept: Kept = { seq: undefined, entries: new Map(), bytes: 0, hits: 0, misses: 0 };

  /** The entry key of a request's operation for its caller at the current composition; undefined when it is not one to keep. */
  const keyOf = (
    params: { query?: unknown; operationName?: unknown; variables?: unknown },
    authorization: string | null | undefined,
  ): { key: string; seq: number } | undefined => {
    const query = params.query;
    if (typeof query !== 'string' || !fields.some((f) => query.includes(f))) return undefined;
    const current = feed.current();
    if (!current) return undefined;
    const caller = callerOf(authorization);
    if (!caller) return undefined;
    if (kept.seq !== current.seq) {
      kept.seq = current.seq;
      kept.entries = new Map();
      kept.bytes = 0;
    }
    return { key: operationKey(caller, { query, operationName: params.operationName, variables: params.variables }), seq: current.seq };
  };

  const plugin = cachePlugin(kept, keyOf, feed, fields);

  return {
    plugin,
    kept(params, authorization) {
      const found = kept.entries.size ? keyOf(params, authorization) : undefined;
      const entry = found && kept.entries.get(found.key);
      return entry && !(entry instanceof Promise) ? entry.bytes : undefined;
    },
    hit: () => void kept.hits++,
    stats: () => ({ hits: kept.hits, misses: kept.misses, entries: kept.entries.size, bytes: kept.bytes }),
    keepsNone: () => kept.entries.size === 0,
  };
}

/** What the cache keeps for the current composition, and its counts. */
interface Kept {
  seq: number | undefined;
  entries: Map<string, Entry | Promise<Entry>>;
  bytes: number;
  hits: number;
  misses: number;
}

type KeyOf = (
  params: { query?: unknown; operationName?: unknown; variables?: unknown },
  authorization: string | null | undefined,
) => { key: string; seq: number } | undefined;

/** The cache's Yoga plugin: a kept response answered from the request parser; a miss executed once, its answer kept. */
function cachePlugin(kept: Kept, keyOf: KeyOf, feed: StatusFeed, fields: readonly string[]): Plugin {
  const pending = new WeakMap<Request, Pending>();
  const served = new WeakMap<object, Buffer>();
  return {
    // A response kept for this request is answered as soon as its parameters are read: nothing else runs.
    onRequestParse({ requestParser, setRequestParser, fetchAPI }) {
      if (!requestParser) return;
      setRequestParser(async (request) => {
        const params = await requestParser(request);
        if (Array.isArray(params) || params instanceof fetchAPI.Response) return params;
        for (const name in params) if (!KNOWN_PARAMS.has(name)) return params; // Yoga answers those with its error
        const found = keyOf(params, request.headers.get('authorization'));
        const entry = found && kept.entries.get(found.key);
        const mediaType = entry && !(entry instanceof Promise) && entry.bytes && regularMediaType(request.headers.get('accept'));
        if (!mediaType) return params;
        kept.hits++;
        return respond(fetchAPI, (entry as Entry).bytes!, mediaType);
      });
    },
    async onParams({ params, request, setResult }) {
      const found = keyOf(params, request.headers.get('authorization'));
      if (!found) return;
      const { key } = found;
      const waited = kept.entries.get(key);
      const entry = waited instanceof Promise ? await waited : waited;
      if (entry?.bytes) {
        kept.hits++;
        const marker: ExecutionResult = { data: null };
        served.set(marker, entry.bytes);
        setResult(marker);
        return;
      }
      if (entry || kept.entries.size >= STATUS_CACHE_ENTRIES || kept.bytes >= STATUS_CACHE_BYTES || kept.seq !== found.seq) return;
      kept.misses++;
      let settle!: (entry: Entry) => void;
      kept.entries.set(key, new Promise<Entry>((resolve) => (settle = resolve)));
      setTimeout(() => settle({ bytes: undefined }), MISS_WAIT_MS).unref();
      const mine = kept.entries;
      pending.set(request, {
        key,
        seq: found.seq,
        cacheable: false,
        settle(result) {
          if (kept.entries === mine) {
            kept.entries.set(key, result);
            kept.bytes += result.bytes?.length ?? 0;
          }
          settle(result);
        },
      });
    },
    onExecute({ args }) {
      const request = (args.contextValue as { request?: Request }).request;
      const waiting = request && pending.get(request);
      if (waiting) waiting.cacheable = answersFromComposition(fields, args.document, args.operationName);
    },
    onResultProcess({ request, result, setResultProcessor }) {
      const hit = served.get(result as object);
      const waiting = pending.get(request);
      pending.delete(request);
      let body = hit;
      if (!hit && waiting) {
        const r = result as ExecutionResult & { stringify?: unknown };
        const keep =
          waiting.cacheable && !Array.isArray(result) && !r.errors?.length && !r.extensions?.http && !r.stringify && feed.current()?.seq === waiting.seq;
        body = keep ? Buffer.from(JSON.stringify(result)) : undefined;
        waiting.settle({ bytes: body });
      }
      const mediaType = body && regularMediaType(request.headers.get('accept'));
      if (!body || !mediaType) return;
      setResultProcessor((_result, fetchAPI) => respond(fetchAPI, body, mediaType), mediaType);
    },
  };
}

/** Whether an operation reads only the composition's fields (and `__typename`) at its root. */
function answersFromComposition(fields: readonly string[], document: DocumentNode, operationName?: string | null): boolean {
  const operation = getOperationAST(document, operationName);
  if (operation?.operation !== 'query') return false;
  return operation.selectionSet.selections.every(
    (s) => s.kind === Kind.FIELD && !s.directives?.length && (s.name.value === '__typename' || fields.includes(s.name.value)),
  );
}

/** A kept answer as Yoga's response. */
const respond = (fetchAPI: { Response: typeof Response }, body: Buffer, mediaType: string) =>
  new fetchAPI.Response(body as Uint8Array<ArrayBuffer>, { status: 200, headers: { 'Content-Type': `${mediaType}; charset=utf-8` } });

import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { printExecutableGraphQLDocument } from '@graphql-tools/documents';
import { GraphQLError, parse } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { Invalid } from '../kernel/errors.js';

/**
 * The manifests codegen writes (hash → document), relative to the package's root: meshctl's and
 * the dashboard's, each beside its client's typed operations (codegen.ts).
 */
const MANIFESTS = ['src/cli/generated/persisted-documents.json', 'dashboard/src/generated/persisted-documents.json'];
/** Raw query texts already matched to the manifest, so a client repeating one is not parsed twice; cleared when full. */
const MATCHED_TEXTS_MAX = 1_000;
/** A raw document this long cannot be one of ours; refused unparsed (meshctl's longest is under 1 KiB). */
export const RAW_QUERY_MAX = 64 * 1024;

/** The params this judges: Yoga's and graphql-ws's alike. */
interface OperationParams {
  query?: string;
  extensions?: Record<string, unknown> | null;
}

/** The operations of the manifests, by hash, and the rule MESH_PERSISTED_ONLY sets. */
export interface PersistedOperations {
  readonly only: boolean;
  readonly size: number;
  /** The names of the manifests' operations (meshctl's `Calls`, `Status`, …). */
  readonly names: readonly string[];
  /**
   * The document to run for `params`: the manifest's for a hash (`documentId`, or Apollo's
   * `extensions.persistedQuery.sha256Hash`), else the raw `query` (only if it is in the manifest
   * when `only`). Throws a GraphQLError (PERSISTED_QUERY_NOT_FOUND, PERSISTED_QUERY_ONLY).
   */
  documentFor(params: OperationParams & { documentId?: unknown }): string | undefined;
}

/** The hash codegen's client preset gives a document: sha256 of its normalized print, hex. */
function hashOf(query: string): string {
  return createHash('sha256')
    .update(printExecutableGraphQLDocument(parse(query, { noLocation: true })))
    .digest('hex');
}

/** An operation's name in a printed document (codegen prints each operation as `query Name(`…). */
const OPERATION_NAME = /\b(?:query|mutation|subscription)\s+([_A-Za-z][_0-9A-Za-z]*)/g;

const bareHash = (id: string): string => id.replace(/^sha256:/, '').toLowerCase();

function refused(code: 'PERSISTED_QUERY_NOT_FOUND' | 'PERSISTED_QUERY_ONLY', message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code, http: { status: 400 } } });
}

function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Invalid('the package root of mesh-gateway (its package.json) was not found');
    dir = up;
  }
  return dir;
}

/**
 * Reads the manifests. A missing or unreadable manifest is an Invalid (the start fails) when `only`
 * is set: a gateway that could answer nothing is a misconfiguration, not an empty list.
 */
export function loadPersistedOperations(only: boolean, files = MANIFESTS.map((file) => join(packageRoot(), file))): PersistedOperations {
  const byHash = new Map<string, string>();
  for (const file of files) {
    let manifest: unknown;
    try {
      manifest = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      if (!only) continue;
      throw new Invalid(`MESH_PERSISTED_ONLY=1 but the manifest ${file} cannot be read: ${(error as Error).message}`);
    }
    for (const [id, document] of Object.entries(manifest as Record<string, unknown>)) {
      if (typeof document === 'string') byHash.set(bareHash(id), document);
    }
  }
  const matched = new Map<string, boolean>();
  const inManifest = (query: string): boolean => {
    const known = matched.get(query);
    if (known !== undefined) return known;
    let found = false;
    try {
      found = query.length <= RAW_QUERY_MAX && byHash.has(hashOf(query));
    } catch {
      found = false; // a document that does not parse is in no manifest
    }
    if (matched.size >= MATCHED_TEXTS_MAX) matched.clear();
    if (found) matched.set(query, true);
    return found;
  };
  return {
    only,
    size: byHash.size,
    names: [...new Set([...byHash.values()].flatMap((document) => [...document.matchAll(OPERATION_NAME)].map((m) => m[1]!)))],
    documentFor(params) {
      const persisted = params.extensions?.persistedQuery as { sha256Hash?: unknown } | undefined;
      const id = typeof params.documentId === 'string' ? params.documentId : typeof persisted?.sha256Hash === 'string' ? persisted.sha256Hash : undefined;
      if (id !== undefined) {
        const document = byHash.get(bareHash(id));
        if (document === undefined) throw refused('PERSISTED_QUERY_NOT_FOUND', `no persisted operation has the hash ${JSON.stringify(id.slice(0, 80))}`);
        return document;
      }
      if (only && (typeof params.query !== 'string' || !inManifest(params.query))) {
        throw refused(
          'PERSISTED_QUERY_ONLY',
          'this gateway answers persisted operations only (MESH_PERSISTED_ONLY): send the hash of a manifest operation, or its exact document',
        );
      }
      return params.query;
    },
  };
}

/**
 * Answers a request naming a hash with the manifest's document, and with `only` refuses any raw
 * document not in the manifest, before the document is parsed or any cache reads it. Put it
 * before the status query cache.
 */
export function usePersistedOperations(operations: PersistedOperations): Plugin {
  return {
    onParams({ params, setParams }) {
      const raw = params as typeof params & { documentId?: unknown };
      const hashed = raw.documentId !== undefined || raw.extensions?.persistedQuery !== undefined;
      if (!hashed && !operations.only) return;
      const query = operations.documentFor(raw);
      if (query === params.query) return;
      const { documentId: _id, ...rest } = raw;
      setParams({ ...rest, query });
    },
  };
}

import { useGraphQlJit } from '@envelop/graphql-jit';
import { type DocumentNode, getOperationAST, Kind } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import { STATUS_QUERY_FIELDS } from '../fanout/status-fields.js';

/**
 * Whether a document's operation runs compiled: a query, not one the status cache answers (that
 * cache keeps only results of the ordinary execution, and its answers come from the composition
 * anyway). Mutations and subscriptions — graphql-ws and the fan-out engine's per-event executions
 * among them — keep graphql-js's execution.
 */
function runsCompiled(document: DocumentNode, operationName?: string | null): boolean {
  const operation = getOperationAST(document, operationName);
  if (operation?.operation !== 'query') return false;
  const status: readonly string[] = STATUS_QUERY_FIELDS;
  return !operation.selectionSet.selections.some((s) => s.kind === Kind.FIELD && status.includes(s.name.value));
}

/**
 * Queries executed by graphql-jit: each document is compiled once into a function that walks the
 * selection without graphql-js's per-field bookkeeping (docs/BENCHMARKS.md, issue 13). The cache
 * keeps compiled code per parsed document, never a result: nothing read for one caller reaches
 * another. A validated document always compiles; should one not, its errors are the answer, and logged.
 */
export function useCompiledExecution(logger: Logger): Plugin {
  return useGraphQlJit(
    {},
    {
      enableIf: (args) => runsCompiled(args.document, args.operationName),
      onError: (result) => logger.warn({ errors: result.errors?.map((e) => e.message) }, 'a query could not be compiled'),
    },
  ) as Plugin;
}

import { type DocumentNode, type ExecutionResult, getOperationAST } from 'graphql';
import { handleStreamOrSingleExecutionResult, isAsyncIterable, type Plugin } from 'graphql-yoga';
import { Counter, Histogram, type Registry } from 'prom-client';

/**
 * Distinct operation names /metrics labels; past them every new name is `other`. Prometheus keeps
 * one series per label value, and names come from clients: an unbounded label is an outage.
 */
export const OPERATION_NAMES_MAX = 100;
/** The label of an operation without a name. */
const UNNAMED_OPERATION = 'anonymous';
/** The label of a name past OPERATION_NAMES_MAX, or longer than OPERATION_NAME_LABEL_MAX. */
const OTHER_OPERATIONS = 'other';
/** A longer name is no name an operator reads on a dashboard: it is `other`. */
const OPERATION_NAME_LABEL_MAX = 100;
/** Operation times (seconds): a read takes milliseconds, a push or a call to a holder up to its timeout. */
const OPERATION_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * The label a name gets: itself when it is one of `known` (the persisted operations' names, always
 * kept) or one of the first `max` other names met, else `other`.
 */
export function operationNameLabels(known: Iterable<string> = [], max = OPERATION_NAMES_MAX): (name: string | null | undefined) => string {
  const persisted = new Set(known);
  const met = new Set<string>();
  return (name) => {
    if (!name) return UNNAMED_OPERATION;
    if (persisted.has(name) || met.has(name)) return name;
    if (met.size >= max || name.length > OPERATION_NAME_LABEL_MAX) return OTHER_OPERATIONS;
    met.add(name);
    return name;
  };
}

/**
 * Per-operation figures: `mesh_graphql_operations_total`, `mesh_graphql_operation_errors_total`
 * and `mesh_graphql_operation_seconds`, by operation name and type, as an envelop plugin. An
 * execution counts (HTTP, SSE and graphql-ws alike); so does a document refused by validation, as
 * an error. For a subscription the time is the time to start it. `known` names (the persisted
 * operations') keep their label however many others came first. A `status` query answered from
 * the per-composition cache runs no execution and is counted in mesh_status_query_cache_hits_total.
 */
export function operationMetrics(registry: Registry, known: Iterable<string> = []): Plugin {
  const labelOf = operationNameLabels(known);
  const labelNames = ['operation', 'type'] as const;
  const operations = new Counter({
    name: 'mesh_graphql_operations_total',
    help: 'GraphQL operations run, by operation name (bounded: `anonymous`, `other`) and type.',
    labelNames,
    registers: [registry],
  });
  const errors = new Counter({
    name: 'mesh_graphql_operation_errors_total',
    help: 'GraphQL operations answered with errors (refused, failed or masked), by operation name and type.',
    labelNames,
    registers: [registry],
  });
  const seconds = new Histogram({
    name: 'mesh_graphql_operation_seconds',
    help: 'Time to run a GraphQL operation (a subscription: to start it), by operation name and type.',
    labelNames,
    buckets: OPERATION_BUCKETS_S,
    registers: [registry],
  });

  const labels = (document: DocumentNode, operationName: string | null | undefined) => {
    const operation = getOperationAST(document, operationName);
    return { operation: labelOf(operationName || operation?.name?.value), type: operation?.operation ?? 'unknown' };
  };
  const done = (label: { operation: string; type: string }, started: number, failed: boolean) => {
    operations.inc(label);
    // Zero too, so that errors over operations is a ratio from the first operation on.
    errors.inc(label, failed ? 1 : 0);
    seconds.observe(label, (performance.now() - started) / 1000);
  };
  const failed = (result: ExecutionResult) => Boolean(result.errors?.length);

  return {
    onValidate({ params }) {
      const started = performance.now();
      return ({ valid }) => {
        if (!valid) done(labels(params.documentAST, undefined), started, true);
      };
    },
    onExecute({ args }) {
      const started = performance.now();
      const label = labels(args.document, args.operationName);
      return {
        onExecuteDone(payload) {
          if (!isAsyncIterable(payload.result)) return done(label, started, failed(payload.result as ExecutionResult));
          // An incremental answer: counted once as it starts, an error in any part marks it failed.
          let erred = false;
          done(label, started, false);
          return handleStreamOrSingleExecutionResult(payload, ({ result }) => {
            if (!erred && failed(result)) {
              erred = true;
              errors.inc(label);
            }
          });
        },
      };
    },
    onSubscribe({ args }) {
      const started = performance.now();
      const label = labels(args.document, args.operationName);
      return {
        onSubscribeResult({ result }) {
          done(label, started, !isAsyncIterable(result) && failed(result as ExecutionResult));
        },
        onSubscribeError() {
          done(label, started, true);
        },
      };
    },
  };
}

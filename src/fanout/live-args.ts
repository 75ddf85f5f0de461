import { type DocumentNode, type FieldNode, type GraphQLSchema, getArgumentValues, getOperationAST, Kind } from 'graphql';
import { everyMsAllowed } from '../services/status/live/subscription.js';

/** A live subscription's own arguments: where it resumes and at what rate it is sent. */
export interface LiveArgs {
  /** `statusChanges(after:)`: the seq the subscriber holds. */
  after?: number;
  /** `everyMs`: at most one message per this many ms. */
  everyMs?: number;
}

/**
 * The `after` and `everyMs` of the one root field of a subscription document, with its variables
 * applied (as graphql-js coerces them). The fan-out key holds the document and variables, so every
 * subscriber of a group has the same.
 */
export function liveArgs(schema: GraphQLSchema, document: DocumentNode, variables: unknown, operationName?: string | null): LiveArgs {
  const operation = getOperationAST(document, operationName);
  const selection = operation?.selectionSet.selections[0];
  const type = schema.getSubscriptionType();
  if (!selection || selection.kind !== Kind.FIELD || !type) return {};
  const field = type.getFields()[selection.name.value];
  if (!field) return {};
  const values = getArgumentValues(field, selection, (variables ?? {}) as Record<string, unknown>);
  const int = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) ? v : undefined);
  return { after: int(values.after), everyMs: int(values.everyMs) };
}

/** Whether a live field's `everyMs` (a literal or a variable) is allowed (`everyMsAllowed`: absent or within 0 to EVERY_MS_MAX). */
export function everyMsInRange(field: FieldNode, variables: unknown): boolean {
  const arg = field.arguments?.find((a) => a.name.value === 'everyMs');
  if (!arg) return true;
  const node = arg.value;
  const value =
    node.kind === Kind.INT
      ? Number(node.value)
      : node.kind === Kind.VARIABLE
        ? (variables as Record<string, unknown> | undefined)?.[node.name.value]
        : undefined;
  return everyMsAllowed(value);
}

import {
  type ASTNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  GraphQLError,
  type GraphQLNamedType,
  type GraphQLSchema,
  getNamedType,
  getNullableType,
  isInterfaceType,
  isListType,
  isObjectType,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { NAME_PAGE_DEFAULT, NAME_PAGE_MAX } from '../kernel/pages.js';
import { CALLS_PAGE_DEFAULT } from '../services/calls/records.js';
import { HAND_ACTS_PAGE_DEFAULT } from '../services/hand-acts/hand-acts.js';
import { PLANS_LISTED_DEFAULT } from '../services/plans/plan.js';
import { STATUS_COUNTS_POINTS_MAX } from '../services/status/looking-back/counts.js';
import { MACHINE_HISTORY_MAX } from '../services/status/looking-back/machine-history.js';

/**
 * Items a list is estimated to hold when the schema gives it no page, declared per list field:
 * a query's cost multiplies them through its nesting, so `seats { holders { machine { holdings
 * { seat { holders …` costs their product, not one per field. A whole list of the mesh counts as
 * its largest page (NAME_PAGE_MAX; past that, read the `…Connection` fields); a link between
 * seats and machines as a handful.
 */
const LIST_SIZES: Readonly<Record<string, number>> = {
  'Query.machines': NAME_PAGE_MAX,
  'Query.holdings': NAME_PAGE_MAX,
  'Query.seats': 100,
  'Query.aliases': 100,
  'Query.repeatedCauses': 100,
  'Query.statusCounts': STATUS_COUNTS_POINTS_MAX,
  'QueryMachineHistorySuccess.data': MACHINE_HISTORY_MAX,
  'Plan.applies': 20,
  'Seat.holders': 10,
  'Seat.serves': 5,
  'Verb.args': 5,
  'Machine.holdings': 10,
};
/** Items estimated for a list of objects LIST_SIZES does not name. */
const LIST_SIZE_DEFAULT = 10;

/** Items a paged list answers when neither `first` nor `last` is given, by field. */
const PAGE_DEFAULTS: Readonly<Record<string, number>> = {
  'Query.calls': CALLS_PAGE_DEFAULT,
  'Query.handActs': HAND_ACTS_PAGE_DEFAULT,
  'Query.plans': PLANS_LISTED_DEFAULT,
};

/**
 * The largest page any list serves (`first`, `last`): larger is refused before the query runs, as
 * INVALID naming the argument, not priced. A list with a smaller maximum (calls, hand-acts)
 * refuses past it when read, also as INVALID.
 */
const PAGE_ARGUMENT_MAX = NAME_PAGE_MAX;

/**
 * A composition (`Status`, a delta and their items) is made once and kept; a read copies it, and
 * its items hold names, not links: its lists count as one item each, never multiplied.
 */
const isComposition = (type: string) => type === 'Status' || type === 'StatusDelta' || /(Status|Changes)$/.test(type);

/** The list that weighs most in a query: its field, where it is asked, and how many items it comes to. */
interface Heaviest {
  list: string;
  path: string;
  items: number;
}

/** What a selection costs for one parent value: the objects it answers, and its heaviest list. */
interface Tally {
  cost: number;
  heaviest?: Heaviest;
}

/** Why an argument is refused before any cost is counted. */
class ArgumentRefused extends Error {
  constructor(
    message: string,
    readonly node: ASTNode,
    readonly argument: string,
  ) {
    super(message);
  }
}

/** Reads the operation's integer argument, from a literal, a variable or its default; undefined when absent or null. */
function intArgument(field: FieldNode, name: string, variables: Record<string, unknown>, defaults: Map<string, ValueNode>): number | undefined {
  const value = field.arguments?.find((a) => a.name.value === name)?.value;
  if (!value) return undefined;
  const literal = value.kind === Kind.VARIABLE ? (variables[value.name.value] ?? literalInt(defaults.get(value.name.value))) : literalInt(value);
  return typeof literal === 'number' && Number.isFinite(literal) ? literal : undefined;
}

function literalInt(value: ValueNode | undefined): number | undefined {
  return value?.kind === Kind.INT ? Number(value.value) : undefined;
}

/** How heavier of two lists weighs. */
const heavier = (a: Heaviest | undefined, b: Heaviest | undefined) => (!a ? b : !b ? a : b.items > a.items ? b : a);

/**
 * Walks an operation as the schema types it, counting the objects it would answer (as GitHub's API
 * counts nodes): each field of an object type once per item of every list around it and its own;
 * scalars ride on their object, free (a type has a bounded set of them). Fragments are counted once each and multiplied where spread,
 * so the walk is linear in the document whatever it spreads.
 */
class CostWalk {
  private readonly fragmentTallies = new Map<string, Tally>();
  private readonly defaults = new Map<string, ValueNode>();

  constructor(
    private readonly schema: GraphQLSchema,
    private readonly fragments: Map<string, FragmentDefinitionNode>,
    private readonly variables: Record<string, unknown>,
    operation: OperationDefinitionNode,
  ) {
    for (const definition of operation.variableDefinitions ?? []) {
      if (definition.defaultValue) this.defaults.set(definition.variable.name.value, definition.defaultValue);
    }
  }

  /** A selection's tally for one value of `type`; `page` is the size a Connection's `edges` take. */
  selection(set: SelectionSetNode, type: GraphQLNamedType, page: number, seen: ReadonlySet<string>): Tally {
    let cost = 0;
    let heaviest: Heaviest | undefined;
    for (const selection of set.selections) {
      let tally: Tally;
      if (selection.kind === Kind.FIELD) {
        tally = this.field(selection, type, page, seen);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const on = selection.typeCondition ? this.schema.getType(selection.typeCondition.name.value) : type;
        tally = this.selection(selection.selectionSet, on ?? type, page, seen);
      } else {
        tally = this.fragment(selection.name.value, page, seen);
      }
      cost += tally.cost;
      heaviest = heavier(heaviest, tally.heaviest);
    }
    return { cost, heaviest };
  }

  private fragment(name: string, page: number, seen: ReadonlySet<string>): Tally {
    const known = this.fragmentTallies.get(name);
    if (known) return known;
    const fragment = this.fragments.get(name);
    // A cycle or an unknown fragment is validation's to refuse; it costs nothing here.
    if (!fragment || seen.has(name)) return { cost: 0 };
    const type = this.schema.getType(fragment.typeCondition.name.value);
    if (!type) return { cost: 0 };
    const tally = this.selection(fragment.selectionSet, type, page, new Set([...seen, name]));
    this.fragmentTallies.set(name, tally);
    return tally;
  }

  private field(node: FieldNode, parent: GraphQLNamedType, page: number, seen: ReadonlySet<string>): Tally {
    const definition = isObjectType(parent) || isInterfaceType(parent) ? parent.getFields()[node.name.value] : undefined;
    if (!definition || !node.selectionSet) return { cost: 0 };
    const named = getNamedType(definition.type);
    const coordinate = `${parent.name}.${definition.name}`;
    const paged = definition.args.some((a) => a.name === 'first' || a.name === 'last');
    let asked: number | undefined;
    if (paged) {
      for (const argument of ['first', 'last']) {
        const n = intArgument(node, argument, this.variables, this.defaults);
        if (n !== undefined && n > PAGE_ARGUMENT_MAX) {
          throw new ArgumentRefused(
            `${argument} is ${n} on ${definition.name}: at most ${PAGE_ARGUMENT_MAX} a page; ask for fewer and follow the cursors`,
            node,
            argument,
          );
        }
        asked ??= n === undefined ? undefined : Math.max(0, n);
      }
      asked ??= PAGE_DEFAULTS[coordinate] ?? NAME_PAGE_DEFAULT;
    }
    let items = 1;
    let inner = page;
    if (paged && named.name.endsWith('Connection')) inner = asked!;
    else if (isListType(getNullableType(definition.type))) {
      if (isComposition(parent.name)) items = 1;
      else if (paged) items = asked!;
      else if (parent.name.endsWith('Connection') && definition.name === 'edges') items = page;
      else items = LIST_SIZES[coordinate] ?? LIST_SIZE_DEFAULT;
    }
    const below = this.selection(node.selectionSet, named, inner, seen);
    const path = node.alias?.value ?? node.name.value;
    const own: Heaviest | undefined = items > 1 ? { list: coordinate, path, items } : undefined;
    const scaled = below.heaviest ? { ...below.heaviest, path: `${path}.${below.heaviest.path}`, items: below.heaviest.items * items } : undefined;
    return { cost: items * (1 + below.cost), heaviest: heavier(own, scaled) };
  }
}

/** The operation a request runs: the one named, or the document's only one. */
function operationOf(document: DocumentNode, name: unknown): OperationDefinitionNode | undefined {
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (typeof name === 'string' && name) return operations.find((o) => o.name?.value === name);
  return operations.length === 1 ? operations[0] : undefined;
}

/**
 * Why an operation, valid otherwise, may not run for its size: a `first` or `last` over
 * PAGE_ARGUMENT_MAX (INVALID, naming the argument), or a cost over `limit` counted with each
 * list's size (TOO_LARGE, naming the heaviest list, where it is asked and the limit). Undefined
 * when it may run.
 */
export function costRefusal(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: unknown,
  variables: unknown,
  limit: number,
): GraphQLError | undefined {
  const operation = operationOf(document, operationName);
  if (!operation) return undefined;
  const root =
    operation.operation === 'query' ? schema.getQueryType() : operation.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType();
  if (!root) return undefined;
  const fragments = new Map(document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]));
  const values = variables && typeof variables === 'object' && !Array.isArray(variables) ? (variables as Record<string, unknown>) : {};
  let tally: Tally;
  try {
    tally = new CostWalk(schema, fragments, values, operation).selection(operation.selectionSet, root, NAME_PAGE_DEFAULT, new Set());
  } catch (error) {
    if (!(error instanceof ArgumentRefused)) throw error;
    return new GraphQLError(error.message, { nodes: [error.node], extensions: { code: 'INVALID', field: error.argument } });
  }
  if (tally.cost <= limit) return undefined;
  const cost = Math.round(tally.cost);
  const heaviest = tally.heaviest;
  const figure = (n: number) => Math.round(n).toLocaleString('en-US');
  const counted = heaviest && LIST_SIZES[heaviest.list] !== undefined ? `, counted at ${LIST_SIZES[heaviest.list]} each` : '';
  const which = heaviest
    ? `; most of them from the list ${heaviest.list} at ${heaviest.path}: about ${figure(heaviest.items)} items${counted}. Nest fewer lists, or page them (the …Connection fields)`
    : '';
  return new GraphQLError(`the query would answer about ${figure(cost)} objects, over the cost limit of ${figure(limit)} an operation may ask${which}`, {
    extensions: { code: 'TOO_LARGE', cost, limit, ...(heaviest ? { list: heaviest.list, path: heaviest.path } : {}) },
  });
}

/**
 * Refuses, once an operation is valid and before it runs, one asking for a page over
 * PAGE_ARGUMENT_MAX (INVALID, naming `first` or `last`) or costing more than `limit` objects with
 * each list counted at its size (TOO_LARGE, naming the list and the limit; see costRefusal).
 * Judged on every request with its variables, after Yoga's validation cache: `first: $n` varies.
 * Covers HTTP, SSE and graphql-ws (all validate through it).
 */
export function useQueryCost(limit: number): Plugin {
  return {
    onValidate({ context, params }) {
      return ({ valid, setResult }) => {
        if (!valid) return;
        const request = (context as { params?: { operationName?: unknown; variables?: unknown } }).params;
        const refusal = costRefusal(params.schema, params.documentAST, request?.operationName, request?.variables, limit);
        if (refusal) setResult([refusal]);
      };
    },
  };
}

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import {
  buildSchema,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLInputType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  Kind,
  type OperationDefinitionNode,
  parse,
  print,
  typeFromAST,
  visit,
} from 'graphql';
import { CONTROLLER_VERBS } from '../../src/services/controller/verbs.js';
import { aComposition } from '../fixtures/compositions.js';
import { DEFINE_SEAT, HOLD_SEAT, RENAME_SEAT } from '../fixtures/operations.js';

// The valid requests the fuzzer starts from (the dashboard's and meshctl's operations, the news an
// agent sends, the controller's verbs, a composition), and how it makes them bad.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const schema = buildSchema(readFileSync(join(ROOT, 'schema.graphql'), 'utf8'));

/** One operation as a client sends it: the document (with only the fragments it uses) and its kind. */
interface RealOperation {
  name: string;
  kind: 'query' | 'mutation' | 'subscription';
  query: string;
  /** A valid value for each variable, as the operation's client would send. */
  variables: fc.Arbitrary<Record<string, unknown>>;
}

/** Fragments `node` spreads, and those they spread, from `fragments`. */
function fragmentsUsed(
  node: OperationDefinitionNode | FragmentDefinitionNode,
  fragments: Map<string, FragmentDefinitionNode>,
  seen = new Set<string>(),
): Set<string> {
  visit(node, {
    FragmentSpread(spread) {
      const name = spread.name.value;
      const fragment = fragments.get(name);
      if (seen.has(name) || !fragment) return;
      seen.add(name);
      fragmentsUsed(fragment, fragments, seen);
    },
  });
  return seen;
}

/** Names a machine, seat, module or site as the mesh writes them: mostly a small pool, so a long run does not grow the mesh without end. */
const aName = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('fz-m1', 'fz-m2', 'fz-m3', 'queue', 'broker', 'eu-1', 'seat-a', 'agent', 'mesh-controller') },
  // Strangers from a pool of 200: the mesh a long run makes stays the same size, so memory that grows is a leak.
  { weight: 1, arbitrary: fc.nat({ max: 199 }).map((i) => `fz-r${i}`) },
);

/** A valid value of a GraphQL input type (a name for a string, a small count for an Int, a recent instant). */
function validValue(type: GraphQLInputType, depth = 0): fc.Arbitrary<unknown> {
  if (isNonNullType(type)) return validValue(type.ofType, depth);
  if (isListType(type)) return fc.array(validValue(type.ofType, depth + 1), { maxLength: depth > 1 ? 0 : 3 });
  if (isEnumType(type)) return fc.constantFrom(...type.getValues().map((v) => v.name));
  if (isInputObjectType(type)) {
    const fields = Object.values(type.getFields());
    return fc.record(Object.fromEntries(fields.map((f) => [f.name, validValue(f.type, depth + 1)])), {
      requiredKeys: fields.filter((f) => isNonNullType(f.type)).map((f) => f.name),
    });
  }
  switch (type.name) {
    case 'Int':
      return fc.integer({ min: 1, max: 50 });
    case 'Float':
      return fc.double({ min: 0, max: 100, noNaN: true });
    case 'Boolean':
      return fc.boolean();
    case 'DateTime':
      return fc.integer({ min: 0, max: 3_600_000 }).map((ago) => new Date(Date.now() - ago).toISOString());
    case 'JSON':
      return fc.jsonValue({ maxDepth: 2 });
    default:
      return aName;
  }
}

/** Every operation of the `.graphql` files in `dir`, each with the fragments it uses. */
function operationsIn(dir: string): RealOperation[] {
  const operations: RealOperation[] = [];
  for (const file of readdirSync(join(ROOT, dir)).filter((f) => f.endsWith('.graphql'))) {
    const document: DocumentNode = parse(readFileSync(join(ROOT, dir, file), 'utf8'));
    const fragments = new Map(
      document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((f) => [f.name.value, f] as const),
    );
    for (const operation of document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)) {
      const used = [...fragmentsUsed(operation, fragments)].map((name) => fragments.get(name)!);
      const variables = Object.fromEntries(
        (operation.variableDefinitions ?? []).map((v) => [v.variable.name.value, validValue(typeFromAST(schema, v.type as never) as GraphQLInputType)]),
      );
      operations.push({
        name: operation.name?.value ?? file,
        kind: operation.operation as RealOperation['kind'],
        query: [operation, ...used].map((d) => print(d)).join('\n'),
        variables: fc.record(variables),
      });
    }
  }
  return operations;
}

/** Reads the issue 34 found too costly or misleading, sent among the real ones. */
const HURTFUL_QUERIES = [
  `{ ${Array.from({ length: 8 }, (_, i) => `a${i}: seats { holders { machine { holdings { seat { holders { machine { holdings { seat { holders { module } } } } } } } } } }`).join(' ')} }`,
  '{ machinesConnection(first: 5000) { edges { node { name } } } }',
  '{ machinesConnection(first: 5, after: "WyJtYWNoaW5lcyIsIlx1MDAwMCJd") { edges { node { name } } } }',
];

/** The dashboard's and meshctl's operations, and a few the tests send. */
const REAL_OPERATIONS: RealOperation[] = [
  ...operationsIn('dashboard/src/operations'),
  ...operationsIn('src/cli/operations'),
  ...[DEFINE_SEAT, RENAME_SEAT, HOLD_SEAT].map((query, i) => ({
    name: `fixture${i}`,
    kind: 'mutation' as const,
    query,
    variables: fc.record({
      input: fc.record({ name: aName, scope: fc.constantFrom('read', 'act') }),
      from: aName,
      to: aName,
      seat: aName,
      machine: aName,
      module: aName,
    }),
  })),
  ...HURTFUL_QUERIES.map((query, i) => ({ name: `hurtful${i}`, kind: 'query' as const, query, variables: fc.constant({}) })),
];

export const SUBSCRIPTIONS = REAL_OPERATIONS.filter((o) => o.kind === 'subscription');

/** Characters and values that have hurt parsers before. */
const NASTY_BITS = [
  '{',
  '}',
  '[',
  '"',
  '\\',
  '\u0000',
  '\uD800',
  '𝕏',
  '\r\n',
  '%00',
  '%',
  '999999999999999999999999',
  '-1e400',
  '$',
  '@include(if: true)',
  '...',
  '__proto__',
  'constructor',
];
const nastyBit = fc.oneof(fc.constantFrom(...NASTY_BITS), fc.string({ unit: 'binary', maxLength: 8 }));

/** A string made bad: cut, a nasty bit inserted, repeated, its numbers made huge, or replaced. */
export function mutatedText(text: string): fc.Arbitrary<string> {
  return fc
    .tuple(fc.nat(), fc.array(nastyBit, { minLength: 1, maxLength: 3 }), fc.constantFrom('cut', 'insert', 'repeat', 'numbers', 'keep'))
    .map(([at, bits, how]) => {
      const i = at % (text.length + 1);
      if (how === 'cut') return text.slice(0, i);
      if (how === 'insert') return text.slice(0, i) + bits.join('') + text.slice(i);
      if (how === 'repeat') return bits.join('').repeat(1 + (at % 300)) + text;
      if (how === 'numbers') return text.replace(/\d+/g, String(at % 2 ? -at : 9 ** (at % 30)));
      return text;
    });
}

/** A JSON value that hurts: odd scalars, huge strings, deep nesting, prototype keys. */
const hostileJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(null, -1, 0, 2 ** 53, -(2 ** 63), 1e308, '', ' ', '\u0000', 'x'.repeat(70_000), '*', '>', 'a.b', true, [], {}),
  fc.constantFrom(JSON.parse('{"__proto__":{"polluted":true}}'), { constructor: { prototype: 1 } }),
  fc.integer({ min: 1, max: 1000 }).map((depth) => JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`)),
);

/**
 * `value` made bad: one field (at any depth) replaced by a hostile value, dropped, or given a
 * stranger; or the whole of it replaced. Most of the time it stays otherwise valid, which is what
 * reaches past the first check.
 */
export function mutatedJson(value: unknown): fc.Arbitrary<unknown> {
  return fc.tuple(fc.nat(), hostileJson, fc.constantFrom('replace', 'drop', 'add', 'whole', 'keep')).map(([at, bad, how]) => {
    if (how === 'keep') return value;
    if (how === 'whole') return bad;
    const copy = structuredClone(value);
    const holders: [Record<string, unknown> | unknown[], string | number][] = [];
    const walk = (node: unknown) => {
      if (node === null || typeof node !== 'object') return;
      for (const [k, v] of Object.entries(node)) {
        holders.push([node as Record<string, unknown>, Array.isArray(node) ? Number(k) : k]);
        walk(v);
      }
    };
    walk(copy);
    if (holders.length === 0 || copy === null || typeof copy !== 'object') return bad;
    const [holder, key] = holders[at % holders.length]!;
    if (how === 'replace') (holder as Record<string | number, unknown>)[key] = bad;
    else if (how === 'drop') Array.isArray(holder) ? holder.splice(key as number, 1) : delete holder[key as string];
    else (holder as Record<string, unknown>)[`fz${at % 7}`] = bad;
    return copy;
  });
}

/** A request body for /graphql: a real operation with valid variables, mutated or not. */
export const graphqlRequest: fc.Arbitrary<Record<string, unknown>> = fc
  .constantFrom(...REAL_OPERATIONS)
  .chain((op) =>
    fc.record({
      query: fc.oneof({ weight: 3, arbitrary: fc.constant(op.query) }, mutatedText(op.query)),
      variables: op.variables,
      operationName: fc.constant(op.name),
    }),
  )
  .chain((request) => fc.oneof({ weight: 2, arbitrary: fc.constant(request as unknown) }, mutatedJson(request)))
  // A body that is not an object is sent by other arbitraries (aBody); here it is taken as the query.
  .map((request) => (request !== null && typeof request === 'object' && !Array.isArray(request) ? (request as Record<string, unknown>) : { query: request }));

/** An instant an agent could send as `at`: now, its clock behind or ahead by up to an hour, or nonsense. */
const anAt = fc.oneof(
  fc.integer({ min: -3_600_000, max: 3_600_000 }).map((off) => new Date(Date.now() + off).toISOString()),
  fc.constantFrom('0001-01-01T00:00:00Z', '9999-12-31T23:59:59Z', '2026-13-45T00:00:00Z', 'yesterday', ''),
);

/** A news message as the agent (src/simulate.ts) and a build send it: subject suffix and body. */
export const validNews: fc.Arbitrary<{ subject: string; body: Record<string, unknown> }> = fc.oneof(
  fc.record({
    subject: aName.map((m) => `machine.${m}`),
    body: fc.record({
      kind: fc.constant('heartbeat'),
      at: anAt,
      site: aName,
      modules: fc.array(aName, { maxLength: 4 }),
      claims: fc.dictionary(aName, fc.array(aName, { maxLength: 2 }), { maxKeys: 2 }),
    }),
  }),
  fc.record({
    subject: aName.map((m) => `machine.${m}`),
    body: fc.record({ kind: fc.constant('report'), at: anAt, plan: aName, build: aName, ok: fc.boolean(), detail: fc.string({ maxLength: 40 }) }),
  }),
  fc.record({
    subject: aName.map((b) => `build.${b}`),
    body: fc.record({ kind: fc.constantFrom('started', 'finished', 'failed'), at: anAt, module: aName }),
  }),
);

const ARG_VALUES: Record<string, fc.Arbitrary<unknown>> = {
  String: aName,
  ID: fc.oneof(aName, fc.constantFrom('0', 'WyJtYWNoaW5lcyIsIlx1MDAwMCJd')),
  Int: fc.integer({ min: 0, max: 100 }),
  DateTime: anAt,
  JSON: fc.jsonValue({ maxDepth: 2 }),
  '[[String]]': fc.array(fc.array(aName, { maxLength: 2 }), { maxLength: 2 }),
};

/** A verb the controller serves and arguments of the types it declares (why: a short reason, as meshctl sends). */
export const validVerbCall: fc.Arbitrary<{ verb: string; args: Record<string, unknown> }> = fc.constantFrom(...CONTROLLER_VERBS).chain((verb) =>
  fc.record({
    verb: fc.constant(verb.name),
    args: fc.record(
      Object.fromEntries(verb.args.map((a) => [a.name, a.name === 'timeoutMs' ? fc.integer({ min: 100, max: 2000 }) : (ARG_VALUES[a.type] ?? aName)])),
      { requiredKeys: verb.args.filter((a) => a.required).map((a) => a.name) },
    ),
  }),
);

/** A whole composition as the serving replica publishes it on `<subjects>.status`, of a few machines. */
export const validComposition = fc.integer({ min: 1, max: 1000 }).map((seq) => aComposition(seq, 3, 2) as unknown as Record<string, unknown>);

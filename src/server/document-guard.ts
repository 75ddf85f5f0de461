import { GraphQLError, type Source, type StringValueNode, type ValidationContext } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { holdsNul, JSON_DEPTH_MAX, jsonTooDeep } from '../kernel/values.js';

/**
 * The deepest nesting of `{`, `[` and `(` a document may have. graphql-js parses recursively and
 * graphql-armor's depth limit counts selections only, so a list literal 2,000 deep overflowed the
 * stack; 64 leaves room for the 12 selection levels allowed and any argument a client writes.
 */
const DOCUMENT_NESTING_LIMIT = 64;

const OPEN = new Set(['{', '[', '(']);
const CLOSE = new Set(['}', ']', ')']);

const tooDeep = () =>
  new GraphQLError(`the document nests brackets more than ${DOCUMENT_NESTING_LIMIT} deep`, {
    extensions: { code: 'INVALID', http: { status: 400 } },
  });

/**
 * The deepest bracket nesting of a GraphQL document, outside strings and comments; stops
 * counting once past `limit`. Linear in the document's length, without recursion.
 */
function documentNesting(text: string, limit = DOCUMENT_NESTING_LIMIT): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '#') {
      while (i < text.length && text[i] !== '\n' && text[i] !== '\r') i++;
    } else if (c === '"') {
      if (text.startsWith('"""', i)) {
        i += 3;
        while (i < text.length && !text.startsWith('"""', i)) i += text.startsWith('\\"""', i) ? 4 : 1;
        i += 2;
      } else {
        i++;
        while (i < text.length && text[i] !== '"' && text[i] !== '\n') i += text[i] === '\\' ? 2 : 1;
      }
    } else if (OPEN.has(c)) {
      depth++;
      if (depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if (CLOSE.has(c)) {
      depth--;
    }
  }
  return deepest;
}

/**
 * Refuses, before graphql-js parses it, a document nested past DOCUMENT_NESTING_LIMIT (a
 * GraphQLError with `code: INVALID`, HTTP 400), and answers a parser's stack overflow the same
 * way rather than as an unexpected error. Covers HTTP, SSE and graphql-ws (all parse through it).
 */
export function useDocumentNestingLimit(): Plugin {
  return {
    onParse({ params, parseFn, setParseFn }) {
      const source = params.source as string | Source;
      const text = typeof source === 'string' ? source : source.body;
      if (documentNesting(text) > DOCUMENT_NESTING_LIMIT) throw tooDeep();
      setParseFn((...args) => {
        try {
          return parseFn(...args);
        } catch (error) {
          if (error instanceof RangeError) throw tooDeep();
          throw error;
        }
      });
    },
  };
}

const NUL_MESSAGE = 'a string holds a NUL character (U+0000), which no name or text may hold';
const nulRefused = () => new GraphQLError(NUL_MESSAGE, { extensions: { code: 'INVALID', http: { status: 400 } } });

/**
 * Refuses a NUL character in any string literal of a document, with `code: INVALID` before it
 * runs: PostgreSQL's text cannot hold one (`invalid byte sequence 0x00`), and no name or free
 * text needs one. Variables are judged by `variablesRefusal` (useParamsGuard; graphql-ws).
 */
export function useNulRefusal(): Plugin {
  return {
    onValidate({ addValidationRule }) {
      addValidationRule((context: ValidationContext) => ({
        StringValue(node: StringValueNode) {
          if (node.value.includes('\u0000')) context.reportError(new GraphQLError(NUL_MESSAGE, { nodes: [node], extensions: { code: 'INVALID' } }));
        },
      }));
    },
  };
}

/** Why an operation's variables cannot be taken, as its refusal; undefined when they can. */
export function variablesRefusal(variables: unknown): GraphQLError | undefined {
  if (jsonTooDeep(variables)) {
    return new GraphQLError(`the variables nest more than ${JSON_DEPTH_MAX} deep`, { extensions: { code: 'INVALID', http: { status: 400 } } });
  }
  if (holdsNul(variables)) return nulRefused();
  return undefined;
}

import { GraphQLError, type Source, type StringValueNode, type ValidationContext } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { holdsNul } from '../kernel/values.js';

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
 * Refuses a NUL character in any string of an operation, literal or variable, with `code:
 * INVALID` before it runs: PostgreSQL's text cannot hold one (`invalid byte sequence 0x00`), and
 * no name or free text needs one. graphql-ws judges its variables with `holdsNul` itself.
 */
export function useNulRefusal(): Plugin {
  return {
    onParams({ params }) {
      if (holdsNul(params.variables)) throw nulRefused();
    },
    onValidate({ addValidationRule }) {
      addValidationRule((context: ValidationContext) => ({
        StringValue(node: StringValueNode) {
          if (node.value.includes('\u0000')) context.reportError(new GraphQLError(NUL_MESSAGE, { nodes: [node], extensions: { code: 'INVALID' } }));
        },
      }));
    },
  };
}

/**
 * A GET whose `variables` or `extensions` is not JSON (`variables=%7B`) is answered 400 naming
 * the parameter: Yoga's GET parser lets `JSON.parse`'s SyntaxError through as an unexpected error.
 */
export function useReadableSearchParams(): Plugin {
  return {
    onRequestParse({ request, requestParser, setRequestParser }) {
      if (request.method !== 'GET' || !requestParser) return;
      const parser = requestParser;
      setRequestParser(async (req) => {
        try {
          return await parser(req);
        } catch (error) {
          if (!(error instanceof SyntaxError)) throw error;
          const params = new URL(req.url).searchParams;
          const bad = ['variables', 'extensions'].find((name) => {
            const raw = params.get(name);
            if (!raw) return false;
            try {
              JSON.parse(raw);
              return false;
            } catch {
              return true;
            }
          });
          throw new GraphQLError(`the ${bad ?? 'variables'} parameter is not JSON: ${error.message}`, {
            extensions: { code: 'BAD_REQUEST', http: { status: 400 } },
          });
        }
      });
    },
  };
}

import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { httpDoorOf, type OperationParams, type RequestFacts } from './guard.js';
import type { Guards } from './index.js';
import { asGraphQLError } from './refusal.js';

/**
 * The guards of a request inside Yoga (POST, GET, SSE, multipart; the status fast path's
 * refusals come here too): the request stage before its body is parsed, the operation stage on
 * each operation's parameters as soon as they are read, before any plugin that wraps the request
 * parser uses them (the status query cache keys them). A refusal is a GraphQLError whose `http`
 * extension sets the status. A GET whose `variables` or `extensions` is not JSON is a 400 naming
 * the parameter, where Yoga's GET parser let `JSON.parse`'s SyntaxError through as a 500.
 */
export function useGuards(guards: Guards): Plugin {
  return {
    onRequestParse({ request, requestParser, setRequestParser }) {
      const { headers, method } = request;
      const facts: RequestFacts = {
        door: httpDoorOf(method, headers.get('accept')),
        method,
        authorization: headers.get('authorization'),
        contentType: headers.get('content-type'),
        contentLength: headers.get('content-length'),
        csrfHeader: headers.has('x-graphql-yoga-csrf'),
      };
      const refusal = guards.judge('request', facts);
      if (refusal) throw asGraphQLError(refusal);
      if (!requestParser) return;
      const parser = requestParser;
      setRequestParser(async (req) => {
        let params: Awaited<ReturnType<typeof parser>>;
        try {
          params = await parser(req);
        } catch (error) {
          if (!(error instanceof SyntaxError) || method !== 'GET') throw error;
          throw new GraphQLError(`the ${unreadableSearchParam(req.url)} parameter is not JSON: ${error.message}`, {
            extensions: { code: 'BAD_REQUEST', http: { status: 400 } },
          });
        }
        for (const one of Array.isArray(params) ? params : [params]) {
          const judged = one && typeof one === 'object' ? guards.judge('operation', { ...facts, params: one as OperationParams }) : undefined;
          if (judged) throw asGraphQLError(judged);
        }
        return params;
      });
    },
  };
}

/** The search parameter of a GET that is not JSON. */
function unreadableSearchParam(url: string): string {
  const params = new URL(url).searchParams;
  for (const name of ['variables', 'extensions']) {
    const raw = params.get(name);
    if (!raw) continue;
    try {
      JSON.parse(raw);
    } catch {
      return name;
    }
  }
  return 'variables';
}

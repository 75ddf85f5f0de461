import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/** The most bytes a request body may have: Yoga's own default bound, kept as it was. */
export const REQUEST_BODY_LIMIT = 25_000_000;

const refused = (message: string, status: number, code: string) => new GraphQLError(message, { extensions: { http: { status }, code } });

/**
 * Yoga's request body limit, without its cost where it buys nothing. Yoga pipes every POST body
 * through a counting stream and rebuilds the request (about a third of a cached `status` POST's
 * time); a body with a valid Content-Length needs no counting, since node's HTTP parser reads no
 * more than that many bytes (the body guard judges it). A body without one (chunked) is counted here
 * as Yoga does. Use it with
 * Yoga's `maxRequestBodySize: false`, after every plugin that picks a request parser.
 */
export function useRequestBodyLimit(limit = REQUEST_BODY_LIMIT): Plugin {
  return {
    onRequestParse({ request, requestParser, setRequestParser, fetchAPI }) {
      // A Content-Length was judged by the body guard (guards/request.ts), before any plugin's parser.
      if (request.headers.get('content-length') != null) return;
      const parser = requestParser;
      if (!parser || request.body == null) return;
      setRequestParser((req) => {
        const body = req.body!;
        const Transform = body instanceof ReadableStream ? globalThis.TransformStream : fetchAPI.TransformStream;
        let read = 0;
        const counted = body.pipeThrough(
          new Transform<Uint8Array, Uint8Array>({
            transform(chunk, controller) {
              read += chunk.byteLength;
              if (read > limit) controller.error(refused('Request body too large', 413, 'REQUEST_ENTITY_TOO_LARGE'));
              else controller.enqueue(chunk);
            },
          }),
        );
        return parser(
          new fetchAPI.Request(req.url, { method: req.method, headers: req.headers, signal: req.signal, body: counted, duplex: 'half' } as RequestInit),
        );
      });
    },
  };
}

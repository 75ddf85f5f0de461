import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import { LIVE_SEQ } from '../schema/support/live.js';

const NEXT_EVENT = 'event: next\n';

type WithSeq = { [LIVE_SEQ]?: number | string };

/** Each result of a live status subscription carries the seq its resolver marked on the context, for the SSE `id:`. */
function seqOf(value: unknown): number | string | undefined {
  return (value as WithSeq | null)?.[LIVE_SEQ];
}

/**
 * SSE events of the live subscriptions carry the composition's seq (or the hand-act's or call's
 * cursor) as `id:`, so a browser's
 * EventSource sends it back as `Last-Event-ID` when it reconnects and `statusChanges` resumes from
 * it. Yoga's own SSE processor writes the events; this wraps it, writing `id: <seq>` before each
 * `event: next` (at the start of a chunk, as Yoga writes it) whose result was marked with a seq (other subscriptions are left as they are).
 */
export const sseIdsPlugin: Plugin = {
  onSubscribe({ args }) {
    const context = args.contextValue as unknown as Record<symbol, number | string>;
    return {
      onSubscribeResult() {
        return {
          onNext({ result }) {
            const seq = context[LIVE_SEQ];
            if (typeof seq === 'number' || typeof seq === 'string') Object.defineProperty(result, LIVE_SEQ, { value: seq, enumerable: false });
          },
        };
      },
    };
  },
  onResultProcess({ request, result, resultProcessor, setResultProcessor }) {
    const accept = request.headers.get('accept') ?? '';
    if (!resultProcessor || !isAsyncIterable(result) || !accept.includes('text/event-stream') || accept.includes('multipart/mixed')) return;
    const original = resultProcessor;
    setResultProcessor(async (input, fetchAPI, mediaType) => {
      if (!isAsyncIterable(input)) return original(input, fetchAPI, mediaType);
      const ids: (number | string | undefined)[] = [];
      const source = input[Symbol.asyncIterator]();
      const marked: AsyncIterableIterator<typeof input extends AsyncIterable<infer T> ? T : never> = {
        async next() {
          const step = await source.next();
          if (!step.done) ids.push(seqOf(step.value));
          return step;
        },
        return: async (value?: unknown) => (await source.return?.(value)) ?? { done: true, value: undefined },
        [Symbol.asyncIterator]() {
          return this;
        },
      };
      const response = await original(marked, fetchAPI, mediaType);
      if (!response.body) return response;
      const decoder = new fetchAPI.TextDecoder();
      const encoder = new fetchAPI.TextEncoder();
      const withIds = response.body.pipeThrough(
        new fetchAPI.TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            if (decoder.decode(chunk.subarray(0, NEXT_EVENT.length)) === NEXT_EVENT) {
              const id = ids.shift();
              if (id !== undefined) controller.enqueue(encoder.encode(`id: ${id}\n`));
            }
            controller.enqueue(chunk);
          },
        }),
      );
      return new fetchAPI.Response(withIds, { status: response.status, headers: response.headers });
    }, 'text/event-stream');
  },
};

import { expect, test } from 'vitest';
import { useGateway } from '../fixtures/gateway.js';

// The new subscriptions ask what the reads ask: the `read` scope.
const { gw: gateway } = useGateway('live_scopes', {
  tokens: [
    { name: 'reader', scopes: ['read'], token: 'reader-token-0123456789' },
    { name: 'actor', scopes: ['act'], token: 'actor-token-0123456789' },
  ],
});

/** The first event of an SSE subscription, read raw, with a token. */
async function firstEvent(query: string, token: string): Promise<any> {
  const abort = new AbortController();
  const response = await fetch(gateway.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query }),
    signal: abort.signal,
  });
  const decoder = new TextDecoder();
  let text = '';
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      const data = text.split('\n').find((l) => l.startsWith('data:'));
      if (data && text.includes('\n\n')) return JSON.parse(data.slice(5));
    }
  } finally {
    abort.abort();
  }
  throw new Error(`no event: ${text}`);
}

for (const field of ['handActAdded { id }', 'callChanged { id }', 'planChanged { id }']) {
  test(`${field.split(' ')[0]} is refused to a token without the read scope, as the reads are`, async () => {
    const refused = await firstEvent(`subscription { ${field} }`, 'actor-token-0123456789');
    expect(refused.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const query = await gateway.gql('{ handActs(first: 1) { edges { node { id } } } }', undefined, { authorization: 'Bearer actor-token-0123456789' });
    expect(query.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });
}

test('a reader may follow hand-acts: the subscription is taken (its first event is the next act)', async () => {
  const pending = firstEvent('subscription { handActAdded { act } }', 'reader-token-0123456789');
  // Recorded until the subscriber hears one: it is surely subscribed by then.
  let heard: any;
  pending.then((e) => (heard = e));
  for (let i = 0; i < 40 && !heard; i++) {
    await gateway.gql('mutation { recordHandAct(act: "by-reader-test", why: "scopes") { __typename } }', undefined, {
      authorization: 'Bearer actor-token-0123456789',
    });
    await new Promise((r) => setTimeout(r, 250));
  }
  expect((await pending).data.handActAdded.act).toBe('by-reader-test');
});

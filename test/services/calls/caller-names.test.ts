import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, expect, test } from 'vitest';
import WebSocket from 'ws';
import { useGateway } from '../../fixtures/gateway.js';
import { aJwksFile, aJwtOf, aSigningKey, type SigningKey } from '../../fixtures/jwks.js';

// Issue 35, finding 4: a hand-act recorded through callVerb by a JWT whose `sub` is
// `alice@example.com` named the controller as its actor: the responder dropped the forwarded
// caller as not a mesh name. A caller's name is printable and bounded (200), not a mesh name: it
// is kept as it is through every door, callVerb's forwarding included.

const SUB = 'alice@example.com';
let key: SigningKey;
let jwks: ReturnType<typeof aJwksFile>;
beforeAll(async () => {
  key = await aSigningKey('names');
  jwks = aJwksFile([key]);
});
afterAll(() => jwks?.remove());
const { gw, env } = useGateway('names', { env: () => jwks.env });
const bearer = async (sub: string) => ({ authorization: `Bearer ${await aJwtOf(key, { sub, scope: 'read act' })}` });
const actsOf = async (act: string, sub = SUB) =>
  (await gw.gql(`{ handActs(act: "${act}") { edges { node { actor callId } } } }`, {}, await bearer(sub))).data.handActs.edges.map((e: any) => e.node);

test("a JWT's sub acting through callVerb is the hand-act's actor and the inner call's caller, never the controller", async () => {
  const outer = (
    await gw.gql(
      `mutation { callVerb(seat: "${env.controller}", verb: "recordHandAct", args: { act: "names-forwarded", why: "by hand" }) {
        ... on MutationCallVerbSuccess { data { id state caller answerJson } } ... on Error { code message } } }`,
      {},
      await bearer(SUB),
    )
  ).data.callVerb;
  expect(outer.data).toMatchObject({ state: 'OK', caller: SUB, answerJson: { actor: SUB } });
  expect(await actsOf('names-forwarded')).toEqual([{ actor: SUB, callId: expect.any(String) }]);
  const inner = (
    await gw.gql(`{ calls(caller: "${SUB}", verb: "recordHandAct") { edges { node { caller outerCallId } } } }`, {}, await bearer(SUB))
  ).data.calls.edges.map((e: any) => e.node);
  expect(inner).toContainEqual({ caller: SUB, outerCallId: outer.data.id });
  expect(await actsOf('names-forwarded', env.controller)).not.toContainEqual(expect.objectContaining({ actor: env.controller }));
});

test('a sub of any printable characters, spaces at its ends included, keeps its name through HTTP, graphql-ws, SSE and callVerb', async () => {
  const sub = ' Ådá Lovelace (ops) ';
  const http = (
    await gw.gql(
      `mutation { recordHandAct(act: "names-http", why: "by hand") { ... on MutationRecordHandActSuccess { data { actor } } ... on Error { code message } } }`,
      {},
      await bearer(sub),
    )
  ).data.recordHandAct;
  expect(http.data.actor).toBe(sub);
  const client = createClient({ url: gw.url.replace(/^http/, 'ws'), webSocketImpl: WebSocket, connectionParams: await bearer(sub), retryAttempts: 0 });
  try {
    const overWs = await new Promise<any>((resolve, reject) => {
      let got: unknown;
      client.subscribe(
        { query: 'mutation { recordHandAct(act: "names-ws", why: "by hand") { ... on MutationRecordHandActSuccess { data { actor } } } }' },
        { next: (r) => (got = r), error: reject, complete: () => resolve(got) },
      );
    });
    expect(overWs.data.recordHandAct.data.actor).toBe(sub);
  } finally {
    await client.dispose();
  }
  // SSE: Yoga answers a POST with Accept: text/event-stream as a stream of `data:` events.
  const sse = await fetch(gw.url, {
    method: 'POST',
    headers: { ...(await bearer(sub)), 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ query: 'mutation { recordHandAct(act: "names-sse", why: "by hand") { ... on MutationRecordHandActSuccess { data { actor } } } }' }),
  });
  const event = (await sse.text()).split('\n').find((line) => line.startsWith('data: {'));
  expect(JSON.parse(event!.slice(6)).data.recordHandAct.data.actor).toBe(sub);
  const forwarded = (
    await gw.gql(
      `mutation { callVerb(seat: "${env.controller}", verb: "recordHandAct", args: { act: "names-callverb", why: "by hand" }) {
        ... on MutationCallVerbSuccess { data { state answerJson } } ... on Error { code message } } }`,
      {},
      await bearer(sub),
    )
  ).data.callVerb;
  expect(forwarded.data).toMatchObject({ state: 'OK', answerJson: { actor: sub } });
});

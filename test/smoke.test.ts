import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestGateway, testEnv, type TestEnv, type TestGateway } from './fixtures/services.js';

let env: TestEnv;
let gateway: TestGateway;
beforeAll(async () => {
  env = await testEnv('smoke');
  gateway = await startTestGateway(env.env);
});
afterAll(async () => {
  await gateway?.stop();
  await env?.cleanup();
});

test('the default seats are seeded', async () => {
  const { data } = await gateway.gql('{ seats { name } }');
  expect(data.seats.map((s: { name: string }) => s.name)).toContain(env.controller);
});

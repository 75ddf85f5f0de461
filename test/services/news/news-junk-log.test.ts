import { afterAll, beforeAll, expect, test } from 'vitest';
import { useGateway } from '../../fixtures/gateway.js';
import { anAgent, eventually } from '../../fixtures/live.js';
import { logInto } from '../../fixtures/log.js';

// A gateway of our own, so its log can be read.
const { gw, env } = useGateway('junklog', { logger: () => logInto(logged, 'warn', (bytes) => (bytesLogged += bytes)) });
let agent: Awaited<ReturnType<typeof anAgent>>;
const logged: Record<string, any>[] = [];
let bytesLogged = 0;

beforeAll(async () => {
  agent = await anAgent();
});
afterAll(async () => {
  await agent?.close();
});

test('1,000 junk messages make a few log lines that state the count, with samples of subject, reason and size', async () => {
  const before = gw.news.stats.malformed;
  const bytesBefore = bytesLogged;
  for (let i = 0; i < 1_000; i++) agent.nc.publish(`${env.subjects}.news.machine.junk-${i}`, `junk ${i} {`);
  agent.heartbeat(env.subjects, 'after-junk', { modules: ['broker'] });
  await agent.nc.flush();
  await eventually(() => gw.news.stats.malformed - before === 1_000, 'the junk counted');
  await gw.news.flush();
  const lines = logged.filter((l) => l.msg === 'malformed news ignored');
  expect(lines.length).toBeGreaterThanOrEqual(1);
  expect(lines.length).toBeLessThanOrEqual(3);
  expect(lines.reduce((n, l) => n + l.count, 0)).toBe(1_000);
  const samples = lines.flatMap((l) => l.samples);
  expect(samples[0]).toEqual({ subject: `${env.subjects}.news.machine.junk-0`, reason: expect.stringMatching(/not JSON/), bytes: 8 });
  expect(samples.length).toBeLessThanOrEqual(lines.length * 5);
  // The log stays small whatever the junk: well under a line per message.
  expect(bytesLogged - bytesBefore).toBeLessThan(10_000);
  const row = await eventually(
    () => gw.mesh.db.selectFrom('machine').select('name').where('name', '=', 'after-junk').executeTakeFirst(),
    'the good message after the junk',
  );
  expect(row).toEqual({ name: 'after-junk' });
});

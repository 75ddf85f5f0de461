import { expect, test } from 'vitest';
import { useGateway } from '../../fixtures/gateway.js';
import { eventually } from '../../fixtures/live.js';
import { type LogLine, logInto } from '../../fixtures/log.js';
import { useNatsServer } from '../../fixtures/nats-server.js';

// A composition asked just as NATS goes away (it reads the kept seq from a bucket, then publishes)
// fails for NATS's reason: an outage the operator already sees, said at warn, and asked again once
// NATS is back, never an error with a stack. A nats-server of this file's own, killed and started.

/** Longer than a JetStream request's 5 s timeout, so a request made as it died times out. */
const NATS_DOWN_MS = 6_000;
const ERROR = 50;
const WARN = 40;

const nats = useNatsServer();
const logged: LogLine[] = [];
const { gw } = useGateway('composenats', { env: () => ({ NATS_URL: nats.url }), logger: () => logInto(logged, 'info') });

test('a composition asked as NATS goes away is warned about, not logged as an error, and the status is composed again once NATS is back', async () => {
  await eventually(() => gw.mesh.status.current(), 'the first composition');
  const before = gw.mesh.status.current()!.seq;
  // None in flight: one started before the kill would read the kept seq in time and end past it.
  await eventually(() => !gw.composer.composing(), 'no composition in flight');
  await nats.kill();
  // As an acting verb asks it, while this replica still trusts its serving lease.
  gw.composer.request('acted');
  await new Promise((resolve) => setTimeout(resolve, NATS_DOWN_MS));
  await nats.start();
  await eventually(() => (gw.mesh.status.current()?.seq ?? 0) > before, 'a composition after NATS came back', 20_000);
  const errors = logged.filter((line) => (line.level as number) >= ERROR).map((line) => `${line.msg}: ${JSON.stringify(line.err ?? '')}`);
  expect(errors).toEqual([]);
  expect(logged.some((line) => line.level === WARN && line.msg === 'composing the status failed: NATS is unavailable')).toBe(true);
}, 60_000);

import pino from 'pino';
import { expect, test } from 'vitest';
import { followServingLease, type ServingLease } from '../../../src/services/status/composing/serving-lease.js';

// The composer's side of the serving lease: taken back in the term it lapsed in, it composes on from
// its view (`resume`), where a lease taken over after another replica composes anew (`takeover`).

test('the serving lease taken back in the same term resumes composing; taken over, it composes anew after reading the stream', async () => {
  let listener: ((serving: boolean, resumed: boolean) => void) | undefined;
  let serving = true;
  const lease: ServingLease = {
    isServing: () => serving,
    onServingChange: (l) => {
      listener = l;
      return () => undefined;
    },
  };
  const did: string[] = [];
  followServingLease({
    lease,
    feed: {
      current: () => undefined,
      readUpToNow: async () => {
        did.push('read the stream');
      },
    },
    logger: pino({ level: 'silent' }),
    replica: 'r1',
    composedOnce: () => true,
    compose: (trigger) => did.push(trigger),
    stopComposing: () => did.push('stop'),
    resume: () => did.push('resume'),
    notServing: () => did.push('not serving'),
  });
  expect(did).toEqual(['start']);

  serving = false;
  listener!(false, false);
  serving = true;
  listener!(true, true);
  expect(did).toEqual(['start', 'stop', 'resume']);

  serving = false;
  listener!(false, false);
  serving = true;
  listener!(true, false);
  await expect.poll(() => did).toEqual(['start', 'stop', 'resume', 'stop', 'read the stream', 'takeover']);
});

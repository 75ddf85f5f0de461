import { headers } from '@nats-io/transport-node';
import pino from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { FORWARD_PROOF_WINDOW_MS, forwardedCheck, proveForwarded } from '../../../src/services/access/forwarded.js';
import { type ReplicaKeys, startReplicaKeys } from '../../../src/services/access/replica-key.js';
import { freshStore } from '../../fixtures/services.js';

// Issue 35, finding 1: the proof a replica puts on a forwarded call, checked by another replica
// that reads the same key from the same store; a proof holds FORWARD_PROOF_WINDOW_MS either way.

let store: Awaited<ReturnType<typeof freshStore>>;
let keys: ReplicaKeys;
let other: ReplicaKeys;
beforeAll(async () => {
  store = await freshStore('forwarded');
  keys = await startReplicaKeys(store.db, pino({ level: 'silent' }));
  other = await startReplicaKeys(store.db, pino({ level: 'silent' }));
});
afterAll(async () => {
  keys?.stop();
  other?.stop();
  await store?.close();
});

const SUBJECT = 'mesh.seat.ctl.recordHandAct.ctl';
const body = Buffer.from('{"act":"x","why":"y"}');
let n = 0;
const anOuterCall = () => `0mx3eakrpc00c71${String(++n).padStart(4, '0')}`;

test('a proof one replica makes verifies on another of the same store, with the caller as it is', async () => {
  const h = headers();
  const outerCallId = anOuterCall();
  proveForwarded(keys, h, { subject: SUBJECT, caller: ' Ådá (ops)@example.com ', scopes: new Set(['read', 'act']), outerCallId }, body);
  expect(await forwardedCheck(other).check(SUBJECT, h, body)).toEqual({
    ok: true,
    forwarded: { subject: SUBJECT, caller: ' Ådá (ops)@example.com ', scopes: new Set(['read', 'act']), outerCallId },
  });
  // On another subject (another verb), it proves nothing.
  expect(await forwardedCheck(other).check('mesh.seat.ctl.retireSeat.ctl', h, body)).toMatchObject({
    ok: false,
    why: expect.stringContaining('does not verify'),
  });
});

test(`a proof older or newer than ${FORWARD_PROOF_WINDOW_MS / 1000} s is refused; within it, taken once`, async () => {
  const now = Date.now();
  const check = forwardedCheck(other, () => now);
  const made = (at: number) => {
    const h = headers();
    proveForwarded(keys, h, { subject: SUBJECT, caller: 'ops', scopes: new Set(['act']), outerCallId: anOuterCall() }, body, at);
    return h;
  };
  expect(await check.check(SUBJECT, made(now - FORWARD_PROOF_WINDOW_MS - 1_000), body)).toMatchObject({ ok: false, why: expect.stringContaining('outside') });
  expect(await check.check(SUBJECT, made(now + FORWARD_PROOF_WINDOW_MS + 1_000), body)).toMatchObject({ ok: false, why: expect.stringContaining('outside') });
  const late = made(now - FORWARD_PROOF_WINDOW_MS + 1_000);
  expect(await check.check(SUBJECT, late, body)).toMatchObject({ ok: true });
  expect(await check.check(SUBJECT, late, body)).toMatchObject({ ok: false, why: expect.stringContaining('already taken') });
});

import type { MsgHdrs } from '@nats-io/transport-node';
import { ID_PATTERN } from '../../kernel/ids.js';
import { isCallerName, SCOPES, type Scope } from './caller.js';
import type { ReplicaKeys } from './replica-key.js';

/**
 * A forwarded call's proof is good this long either side of the verifying replica's clock: time
 * for a request to cross NATS and for the replicas' clocks to differ, and no more, so a proof
 * seen on the wire cannot be sent again later.
 */
export const FORWARD_PROOF_WINDOW_MS = 30_000;
/**
 * The outer calls a replica remembers having taken within the window, so that a proof seen on the
 * wire is taken once. At most this many: past it (over 3,000 forwarded calls a second to one
 * replica) a forwarded call is refused, never one remembered forgotten.
 */
const FORWARD_SEEN_MAX = 100_000;

/** The original caller, URI-encoded (a JWT's `sub` may hold any printable character, NATS headers only a line). */
export const CALLER_HEADER = 'Mesh-Caller';
/** The outer call (callVerb's own) that the inner one belongs to. */
export const OUTER_CALL_HEADER = 'Mesh-Outer-Call';
/** The original caller's scopes, comma-separated: the inner call runs with them, never with the controller's. */
export const SCOPES_HEADER = 'Mesh-Scopes';
/** The id of the replica key that made the proof. */
const FORWARD_KEY_HEADER = 'Mesh-Forward-Key';
/** When the proof was made, in epoch ms, on the forwarding replica's clock. */
const FORWARD_AT_HEADER = 'Mesh-Forward-At';
/** The proof: HMAC-SHA256, base64url, under the replica key, of the subject, the headers above and the body. */
const FORWARD_PROOF_HEADER = 'Mesh-Forward-Proof';

/** Bumped when what the proof covers changes: a proof of one version never verifies as another. */
const PROOF_VERSION = Buffer.from('mesh-forward-v1\n');

/** What a forwarded call asserts, and the proof covers. */
export interface Forwarded {
  subject: string;
  caller: string;
  scopes: ReadonlySet<Scope>;
  outerCallId: string;
}

/** The bytes the proof is made over: every asserted field (JSON, so no field can run into another), the key, the time, then the body. */
function provenBytes(f: Forwarded, keyId: number, at: number, body: Uint8Array): Uint8Array[] {
  const framing = JSON.stringify([f.subject, f.caller, [...f.scopes].sort().join(','), f.outerCallId, keyId, at]);
  return [PROOF_VERSION, Buffer.from(framing), Buffer.from('\n'), body];
}

/**
 * Sets the headers of a call one replica forwards to the controller's own seat: the caller, its
 * scopes and the outer call, and a proof of them made with the replica key, which only a replica
 * reads (from the store). Anyone on NATS can write the same headers; nobody else can make the proof.
 */
export function proveForwarded(keys: Pick<ReplicaKeys, 'current' | 'sign'>, h: MsgHdrs, f: Forwarded, body: Uint8Array, at = Date.now()): void {
  h.set(CALLER_HEADER, encodeURIComponent(f.caller));
  h.set(SCOPES_HEADER, [...f.scopes].sort().join(','));
  h.set(OUTER_CALL_HEADER, f.outerCallId);
  // The key's id goes under the proof too; nothing runs between choosing it and signing (as the status seal does).
  const keyId = keys.current().id;
  h.set(FORWARD_KEY_HEADER, String(keyId));
  h.set(FORWARD_AT_HEADER, String(at));
  h.set(FORWARD_PROOF_HEADER, keys.sign(provenBytes(f, keyId, at, body)).mac.toString('base64url'));
}

/** A forwarded call whose proof holds, or why it does not. */
type ProofVerdict = { ok: true; forwarded: Forwarded } | { ok: false; why: string };

/** The checker of forwarded calls on one replica: the keys, and the outer calls taken within the window. */
export interface ForwardedCheck {
  /** Whether the headers of a request on `subject` with `body` carry a replica's proof, made within the window and not taken before. */
  check(subject: string, h: MsgHdrs | undefined, body: Uint8Array): Promise<ProofVerdict>;
}

const scopesOf = (value: string): Set<Scope> | undefined => {
  const names = value ? value.split(',') : [];
  return names.every((n) => (SCOPES as readonly string[]).includes(n)) ? new Set(names as Scope[]) : undefined;
};

const decodeCaller = (raw: string): string | undefined => {
  try {
    const caller = decodeURIComponent(raw);
    return isCallerName(caller) ? caller : undefined;
  } catch {
    return undefined;
  }
};

/**
 * Checks forwarded calls: the proof verifies under a replica key (current, announced, or the one
 * before within its grace), its time is within FORWARD_PROOF_WINDOW_MS of this clock, and its outer
 * call was not taken before (remembered for the window, FORWARD_SEEN_MAX at most).
 */
export function forwardedCheck(keys: Pick<ReplicaKeys, 'verify'>, now: () => number = Date.now): ForwardedCheck {
  // Outer call id → until when it is remembered; in the order taken, so expired ones are at the front.
  const seen = new Map<string, number>();
  const forget = (at: number) => {
    for (const [id, until] of seen) {
      if (until > at) break;
      seen.delete(id);
    }
  };
  return {
    async check(subject, h, body) {
      const rawCaller = h?.get(CALLER_HEADER);
      const outerCallId = h?.get(OUTER_CALL_HEADER);
      const keyId = Number(h?.get(FORWARD_KEY_HEADER) || Number.NaN);
      const at = Number(h?.get(FORWARD_AT_HEADER) || Number.NaN);
      const rawProof = h?.get(FORWARD_PROOF_HEADER) ?? '';
      if (!h || !rawCaller || !outerCallId || !rawProof) return { ok: false, why: 'it carries no proof' };
      const caller = decodeCaller(rawCaller);
      const scopes = scopesOf(h.get(SCOPES_HEADER) ?? '');
      if (!caller || !scopes || !Number.isSafeInteger(keyId) || !Number.isSafeInteger(at) || rawProof.length > 128 || !ID_PATTERN.test(outerCallId)) {
        return { ok: false, why: 'its proof is malformed' };
      }
      const forwarded = { subject, caller, scopes, outerCallId };
      if (!(await keys.verify(keyId, Buffer.from(rawProof, 'base64url'), provenBytes(forwarded, keyId, at, body)))) {
        return { ok: false, why: 'its proof does not verify under any replica key' };
      }
      const t = now();
      if (Math.abs(t - at) > FORWARD_PROOF_WINDOW_MS)
        return { ok: false, why: `its proof was made ${Math.round((t - at) / 1000)} s from now, outside ±${FORWARD_PROOF_WINDOW_MS / 1000} s` };
      forget(t);
      if (seen.has(outerCallId)) return { ok: false, why: 'its proof was already taken once' };
      if (seen.size >= FORWARD_SEEN_MAX) return { ok: false, why: `over ${FORWARD_SEEN_MAX} forwarded calls within ${FORWARD_PROOF_WINDOW_MS / 1000} s` };
      seen.set(outerCallId, Math.max(t, at) + FORWARD_PROOF_WINDOW_MS);
      return { ok: true, forwarded };
    },
  };
}

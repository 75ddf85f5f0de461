import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { type DeafSpan, type Judging, machineState, nextStateChangeMs } from '../../../src/services/machines/machines.js';
import { heardBoundsOf } from '../../../src/services/machines/state-bounds.js';

// The one UP / LATE / SILENT rule, without a gateway: judged at the instant news is heard up to,
// and time the gateway could not hear is not silence.
const HEARTBEAT_S = 10;
const L = Date.parse('2026-12-01T03:12:00Z');
const at = (heardUntilMs: number, deaf: DeafSpan[] = []): Judging => ({ heardUntilMs, heartbeatSeconds: HEARTBEAT_S, deaf });
const s = (seconds: number) => seconds * 1000;

describe('a machine is judged at what is heard', () => {
  test('UP until 15 s of news past its last beat are heard, LATE until 60 s, then SILENT', () => {
    expect(machineState(L, at(L + s(15)))).toBe('UP');
    expect(machineState(L, at(L + s(15) + 1))).toBe('LATE');
    expect(machineState(L, at(L + s(60)))).toBe('LATE');
    expect(machineState(L, at(L + s(60) + 1))).toBe('SILENT');
    expect(nextStateChangeMs(L, at(L))).toBe(L + s(15));
    expect(nextStateChangeMs(L, at(L + s(20)))).toBe(L + s(60));
    expect(nextStateChangeMs(L, at(L + s(61)))).toBeUndefined();
  });

  test('a beat lost while the gateway could not hear (NATS restarting) is not silence: a whole LATE threshold follows the deaf span', () => {
    // Beats at L and L+10 s; the one at L+10 s was lost while NATS was away from L+9 s to L+12 s.
    const deaf = [{ fromMs: L + s(9), toMs: L + s(12) }];
    expect(machineState(L, at(L + s(19), deaf))).toBe('UP');
    expect(machineState(L, at(L + s(26), deaf))).toBe('UP');
    expect(machineState(L, at(L + s(27) + 1, deaf))).toBe('LATE');
    expect(nextStateChangeMs(L, at(L + s(19), deaf))).toBe(L + s(27));
  });

  test('a machine LATE or SILENT before the gateway went deaf stays so', () => {
    const deaf = [{ fromMs: L + s(30), toMs: L + s(35) }];
    expect(machineState(L, at(L + s(36), deaf))).toBe('LATE');
    const later = [{ fromMs: L + s(70), toMs: L + s(75) }];
    expect(machineState(L, at(L + s(76), later))).toBe('SILENT');
  });

  test('while the gateway cannot hear (a span not yet over), nothing it has not heard past goes LATE', () => {
    const deaf = [{ fromMs: L + s(5), toMs: Number.POSITIVE_INFINITY }];
    expect(machineState(L, at(L + s(300), deaf))).toBe('UP');
  });

  test('the next change is exactly where the state changes, whatever the deaf spans', () => {
    const span = fc.record({ from: fc.integer({ min: -s(30), max: s(200) }), length: fc.integer({ min: 1, max: s(40) }) });
    fc.assert(
      fc.property(fc.array(span, { maxLength: 4 }), fc.integer({ min: 0, max: s(300) }), (raw, since) => {
        // Spans as the hearing keeps them: oldest first, not overlapping.
        const deaf: DeafSpan[] = [];
        let end = Number.NEGATIVE_INFINITY;
        for (const r of [...raw].sort((a, b) => a.from - b.from)) {
          const fromMs = Math.max(L + r.from, end + 1);
          deaf.push({ fromMs, toMs: fromMs + r.length });
          end = fromMs + r.length;
        }
        const heard = L + since;
        const next = nextStateChangeMs(L, at(heard, deaf));
        const now = machineState(L, at(heard, deaf));
        if (next === undefined) return now === 'SILENT';
        return machineState(L, at(next, deaf)) === now && machineState(L, at(next + 1, deaf)) !== now;
      }),
    );
  });
});

describe('the state filter kept in SQL follows the one rule', () => {
  const spans = fc.array(fc.tuple(fc.integer({ min: 0, max: 200_000 }), fc.integer({ min: 1, max: 30_000 })), { maxLength: 4 }).map((pairs) => {
    const out: DeafSpan[] = [];
    let from = L - 100_000;
    for (const [gap, length] of pairs) {
      from += gap;
      out.push({ fromMs: from, toMs: from + length });
      from += length;
    }
    return out;
  });

  test('heardBoundsOf gives each state as the range of last-heard instants machineState judges so, deaf spans included', () => {
    fc.assert(
      fc.property(spans, fc.integer({ min: 0, max: 300_000 }), fc.integer({ min: -400_000, max: 300_000 }), (deaf, until, heard) => {
        const judging = at(L + until, deaf);
        const lastHeard = L + heard;
        for (const is of ['UP', 'LATE', 'SILENT'] as const) {
          const { fromMs, beforeMs } = heardBoundsOf(is, judging);
          const inside = (fromMs === undefined || lastHeard >= fromMs) && (beforeMs === undefined || lastHeard < beforeMs);
          expect(inside, `${is} at ${heard}`).toBe(machineState(lastHeard, judging) === is);
        }
      }),
      { numRuns: 500 },
    );
  });
});

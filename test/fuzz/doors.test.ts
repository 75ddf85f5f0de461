import { describe, expect, test } from 'vitest';
import { DOORS } from './doors.js';
import { type FuzzReport, fuzzGateway, RSS_BOUND_MB } from './fuzzer.js';
import { KEPT_SEEDS } from './seeds.js';

// The short run of `npm run fuzz` (test/fuzz/main.ts): every kept seed, then every door of an open
// gateway and of a closed one (a tokens file and a JWKS) at once, for FUZZ_MS, from a fixed seed
// (FUZZ_SEED=<n> runs another). A failure prints its input, and its seed and path for
// `npm run fuzz -- --replay`; keep it in test/fuzz/seeds.ts.

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_203);
/** How long each gateway is fuzzed: the two run at once, and the suite has a time budget. */
const FUZZ_MS = Number(process.env.FUZZ_MS ?? 12_000);

/** A failure as a reader of the test's output needs it: what failed, what showed it, how to make it again. */
const shown = (report: FuzzReport) =>
  report.failures.map((f) => ({
    door: f.door,
    kind: f.kind,
    times: f.count,
    detail: f.detail.slice(0, 300),
    ...(f.seed === undefined ? {} : { replay: `npm run fuzz -- --gateway ${f.gateway} --replay ${f.door}:${f.seed}:${f.path}` }),
    input: JSON.stringify(f.input ?? f.suspects)?.slice(0, 1000),
  }));

describe.concurrent('every door, fuzzed', () => {
  for (const kind of ['open', 'closed'] as const) {
    test(
      `the ${kind} gateway takes every kept seed and ${FUZZ_MS / 1000} s of generated and mutated input at every door: no crash, /health throughout, no INTERNAL, no 5xx, memory under ${RSS_BOUND_MB} MB`,
      async () => {
        const report = await fuzzGateway(kind, { doors: DOORS, durationMs: FUZZ_MS, seed: SEED, seeds: KEPT_SEEDS, shrink: false, restartOnCrash: true });
        expect(shown(report)).toEqual([]);
        expect(report.restarts).toBe(0);
        expect(report.peakRssMb).toBeLessThan(RSS_BOUND_MB);
        // Every door was thrown at, not only the quick ones.
        for (const door of DOORS) expect(report.sent[door.name], door.name).toBeGreaterThan(0);
      },
      FUZZ_MS + 60_000,
    );
  }
});

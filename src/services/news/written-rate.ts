/** The rate news is written at is measured over this window, for NEWS_HELD_MS. */
const NEWS_RATE_WINDOW_MS = 2_000;

/** Messages written over the last NEWS_RATE_WINDOW_MS: how much news is about NEWS_HELD_MS of it. */
export function writtenRate(): { add(n: number): void; perMs(): number } {
  let windowStart = Date.now();
  let inWindow = 0;
  let lastRate = 0;
  return {
    add(n) {
      const now = Date.now();
      if (now - windowStart >= NEWS_RATE_WINDOW_MS) {
        lastRate = inWindow / (now - windowStart);
        windowStart = now;
        inWindow = 0;
      }
      inWindow += n;
    },
    perMs: () => Math.max(lastRate, inWindow / Math.max(1, Date.now() - windowStart)),
  };
}

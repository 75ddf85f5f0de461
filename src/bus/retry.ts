import type { Logger } from 'pino';

/**
 * A write the gateway must not lose (a call record, a hand-act) is retried this long while
 * JetStream has no leader for its stream. On losing a node of an R3 cluster NATS 2.9 elects a new
 * leader within a few seconds (4.5 s measured here, test/bus/cluster.test.ts); a lost connection
 * reconnects within one reconnect wait. Longer than both, short of a caller's patience.
 */
export const KV_WRITE_RETRY_MS = 15_000;
/** The first pause between tries; it doubles up to KV_WRITE_PAUSE_MAX_MS. */
const KV_WRITE_PAUSE_FIRST_MS = 50;
const KV_WRITE_PAUSE_MAX_MS = 1_000;

/**
 * What NATS answers while a stream has no leader or the connection is moving to another server:
 * `no responders` (the client names it JetStreamNotEnabled), a timeout, or 2.9's "JetStream system
 * temporarily unavailable". Anything else (a wrong revision, a refusal) is an answer, not an outage.
 */
export function isLeaderless(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'JetStreamNotEnabled' || error.name === 'TimeoutError' || error.name === 'NoRespondersError') return true;
  return /no responders|timeout|temporarily unavailable|jetstream not (enabled|available)|connection (closed|draining)|disconnect/i.test(
    `${error.message} ${(error as { cause?: Error }).cause?.message ?? ''}`,
  );
}

/** JetStream's "wrong last sequence": a write expecting the last message (of its stream, or of its key) to be one it knew found another's. */
const WRONG_LAST_SEQUENCE = 10071;
export const isWrongLastSequence = (error: unknown): boolean =>
  (error as { api_error?: { err_code?: number } })?.api_error?.err_code === WRONG_LAST_SEQUENCE ||
  (error as { code?: unknown })?.code === WRONG_LAST_SEQUENCE ||
  /wrong last sequence/i.test(String((error as Error)?.message ?? error));

/**
 * Runs `write`, and again while it fails for want of a stream leader (isLeaderless), for up to
 * `windowMs` (KV_WRITE_RETRY_MS unless MESH_KV_WRITE_RETRY_S says otherwise: `Buckets.writeRetryMs`); then throws the last error. `write` gets the try's number (0 first), so a
 * write that may have landed before its answer was lost (a create) can check for itself.
 */
export async function retryLeaderless<T>(write: (attempt: number) => Promise<T>, what: string, logger?: Logger, windowMs = KV_WRITE_RETRY_MS): Promise<T> {
  const deadline = Date.now() + windowMs;
  let pause = KV_WRITE_PAUSE_FIRST_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      const result = await write(attempt);
      if (attempt > 0) logger?.info({ what, attempts: attempt + 1 }, 'JetStream write went through after the stream had no leader');
      return result;
    } catch (error) {
      if (!isLeaderless(error) || Date.now() + pause > deadline) throw error;
      if (attempt === 0) logger?.warn({ what, err: String(error) }, 'JetStream write failed for want of a stream leader: retrying');
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause = Math.min(pause * 2, KV_WRITE_PAUSE_MAX_MS);
    }
  }
}

import { type ConsumerMessages, DeliverPolicy } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { FOLLOW_RETRY_MS, type StatusStreamLink } from '../replicating/stream-follower.js';
import { framingOf, type StreamMessage, snapshotStartOf } from '../replicating/wire.js';

/** Where one composition lies in the status stream: its last message, and where the snapshot it is rebuilt from begins. */
export interface Placed {
  seq: number;
  /** The stream sequence of its last message (a snapshot's last part, else its delta's). */
  end: number;
  /** The stream sequence where the snapshot before it (or its own) begins. */
  snapshot: number;
}

/**
 * The status stream's compositions by seq, read from the messages' headers alone (a headers-only
 * consumer, never a body): what `statusAt` rebuilds from is found here in memory instead of by a
 * binary search of direct reads. Three numbers a composition; what the stream dropped goes (`trim`).
 */
export class StreamDirectory {
  private seqs: number[] = [];
  private ends: number[] = [];
  private snapshots: number[] = [];
  /** The last stream sequence read. */
  readUpTo = 0;

  get size(): number {
    return this.seqs.length;
  }

  /** Takes in one message's headers; only a composition's last message places it (a snapshot after its delta replaces it). */
  add(msg: Pick<StreamMessage, 'seq' | 'headers'>): void {
    this.readUpTo = Math.max(this.readUpTo, msg.seq);
    const framing = framingOf(msg);
    const snapshot = snapshotStartOf(msg);
    if (!framing || framing.partIndex !== framing.partCount || snapshot === undefined) return;
    const last = this.seqs.length - 1;
    if (last >= 0 && framing.seq < this.seqs[last]!) return;
    if (last >= 0 && framing.seq === this.seqs[last]) {
      this.ends[last] = msg.seq;
      this.snapshots[last] = snapshot;
      return;
    }
    this.seqs.push(framing.seq);
    this.ends.push(msg.seq);
    this.snapshots.push(snapshot);
  }

  /** The first and last composition placed, if any. */
  span(): { first: number; last: number } | undefined {
    return this.seqs.length ? { first: this.seqs[0]!, last: this.seqs[this.seqs.length - 1]! } : undefined;
  }

  /** Where composition `seq` lies, undefined when the stream as read holds no message of it. */
  placeOf(seq: number): Placed | undefined {
    let lo = 0;
    let hi = this.seqs.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const s = this.seqs[mid]!;
      if (s === seq) return { seq, end: this.ends[mid]!, snapshot: this.snapshots[mid]! };
      if (s < seq) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }

  /** The stream dropped its messages before `first`: compositions whose last message went, go. */
  trim(first: number): void {
    let n = 0;
    while (n < this.ends.length && this.ends[n]! < first) n++;
    if (!n) return;
    this.seqs.splice(0, n);
    this.ends.splice(0, n);
    this.snapshots.splice(0, n);
  }

  /** The first composition of the stream that can be rebuilt (its snapshot still held), if any. */
  firstWhole(first: number): number | undefined {
    for (let i = 0; i < this.seqs.length; i++) if (this.snapshots[i]! >= first) return this.seqs[i];
    return undefined;
  }
}

/**
 * Fills `directory` from the status stream's headers, from its first message on and then as each
 * is put (an ordered headers-only consumer; a read that fails is tried again FOLLOW_RETRY_MS later,
 * from where it stopped). `caughtUp` resolves once what the stream held at the start is read.
 */
export function followDirectory(
  link: Pick<StatusStreamLink, 'js' | 'jsm' | 'stream'>,
  directory: StreamDirectory,
  logger: Logger,
): { caughtUp: Promise<void>; stop(): void } {
  let stopped = false;
  let messages: ConsumerMessages | undefined;
  let markCaughtUp!: () => void;
  const caughtUp = new Promise<void>((resolve) => (markCaughtUp = resolve));
  const run = async () => {
    let target: number | undefined;
    while (!stopped) {
      try {
        if (target === undefined) target = (await link.jsm.streams.info(link.stream)).state.last_seq;
        if (directory.readUpTo >= target) markCaughtUp();
        const from = directory.readUpTo + 1;
        const consumer = await link.js.consumers.get(link.stream, { headers_only: true, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from });
        if (stopped) return;
        messages = await consumer.consume();
        if (stopped) return;
        for await (const m of messages) {
          directory.add({ seq: m.seq, headers: m.headers });
          if (m.seq >= target) markCaughtUp();
        }
      } catch (err) {
        if (stopped) return;
        logger.warn({ err: String(err), retryInMs: FOLLOW_RETRY_MS }, 'reading the status stream’s headers failed');
      } finally {
        messages?.stop();
        messages = undefined;
      }
      if (!stopped) await new Promise((resolve) => setTimeout(resolve, FOLLOW_RETRY_MS));
    }
  };
  void run();
  return {
    caughtUp,
    stop() {
      stopped = true;
      messages?.stop();
      markCaughtUp();
    },
  };
}

/**
 * How long a replica watches a call it ended for a sweep's ABANDONED landing after the end: on a
 * NATS 2.9 cluster a sweep's compare-and-set checked before the end was applied lands just after it
 * (writeEnd in records.ts). A minute is far past any write in flight.
 */
const CALL_END_WATCHED_MS = 60_000;
/**
 * At most this much of ended calls' records is kept for watching (an end is up to ANSWER_BOUND and
 * ARGS_BOUND and a little more); past it the oldest are let go first. Acting calls come at an
 * operator's pace: a minute of them is far below it.
 */
const CALL_ENDS_WATCHED_BYTES = 32 * 1024 * 1024;

/** An end this replica wrote, the revision it landed at, and until when it is watched. */
interface WatchedEnd {
  body: string;
  revision: number;
  until: number;
}

/**
 * The ends one replica wrote lately, each written again (`rewrite`) when the bucket's watch shows an
 * ABANDONED landing after it. Its calls view feeds it every write, in order (`heard`).
 */
export class CallEndWatch {
  private readonly ends = new Map<string, WatchedEnd>();
  /** What the kept bodies weigh, in UTF-16 code units (about their bytes). */
  private size = 0;

  constructor(private readonly rewrite: (id: string, body: string) => void) {}

  /** Watches an end just written at `revision`; one the view already shows marked ABANDONED after it is written again now. */
  watch(id: string, body: string, revision: number, seen?: { revision: number; abandoned: boolean }): void {
    const now = Date.now();
    for (const [key, end] of this.ends) {
      if (end.until > now && this.size + body.length <= CALL_ENDS_WATCHED_BYTES) break;
      this.forget(key, end);
    }
    if (seen && seen.revision > revision) {
      if (seen.abandoned) this.rewrite(id, body);
      return;
    }
    const present = this.ends.get(id);
    if (present) this.forget(id, present);
    this.ends.set(id, { body, revision, until: now + CALL_END_WATCHED_MS });
    this.size += body.length;
  }

  /** A write of the bucket landed at `revision`; `abandoned` says whether it marks the call ABANDONED. */
  heard(id: string, revision: number, abandoned: () => boolean): void {
    const end = this.ends.get(id);
    if (!end || revision <= end.revision) return;
    this.forget(id, end);
    if (abandoned()) this.rewrite(id, end.body);
  }

  private forget(id: string, end: WatchedEnd): void {
    this.ends.delete(id);
    this.size -= end.body.length;
  }
}

import { Invalid } from '../../kernel/errors.js';
import { LiveQueue } from '../../kernel/live-queue.js';
import { oneOf } from '../../kernel/values.js';
import type { Db } from '../../store/db.js';
import { seatNamesFor } from './reading.js';
import { CALL_STATES, type Call, type CallSummary, type CallsMesh, decodeCall, readCall } from './records.js';

/** A call as one change of the bucket brought it: `revision` is where `followCalls` resumes after it. */
export type CallChange = Call & { revision: number };

/**
 * Follows calls as they start and end, on any replica (the bucket's watch): of one seat (by any of
 * its names) and in one state when given. With `after` (a revision of the calls bucket, as each
 * change carries), first every call kept whose last change came after it, oldest change first: a
 * call changed twice meanwhile comes once, as it is now, since the bucket keeps only that. Without
 * it, only changes from now. A follower that lets LIVE_WAITING_MAX wait is dropped.
 */
export async function followCalls(
  mesh: CallsMesh & { db: Db },
  query: { seat?: string | null; state?: string | null; after?: string | null },
): Promise<LiveQueue<CallChange>> {
  const state = oneOf(query.state, CALL_STATES, 'state');
  const seats = query.seat == null ? undefined : await seatNamesFor(mesh.db, query.seat);
  let after: number | undefined;
  if (query.after != null) {
    if (!/^\d{1,15}$/.test(query.after))
      throw new Invalid(`after ${JSON.stringify(query.after.slice(0, 60))} is not a calls cursor: a revision, in digits`, 'after');
    after = Number(query.after);
  }
  const wanted = (c: CallSummary | Call) => (!seats || seats.includes(c.seat)) && (!state || c.state === state);
  const kept =
    after === undefined
      ? []
      : mesh.views.calls
          .values()
          .filter((e) => e.revision > after && wanted(e.value))
          .sort((a, b) => a.revision - b.revision);
  // The watch may yet bring back a change this replica applied first: the backlog sends those.
  const inBacklog = new Set(kept.map((e) => `${e.key}@${e.revision}`));
  // Read whole one at a time as the follower takes them: a long backlog holds only summaries. A
  // call changed again since is left to the live path, which hears that change.
  async function* backlog(): AsyncGenerator<CallChange> {
    for (const entry of kept) {
      const found = await readCall(mesh, entry.key);
      if (found?.revision === entry.revision && wanted(found.call)) yield { ...found.call, revision: found.revision };
    }
  }
  let stop: () => void = () => undefined;
  const queue = new LiveQueue<CallChange>(kept.length ? backlog() : undefined, () => stop());
  stop = mesh.views.calls.onEntry((entry) => {
    if (entry.operation !== 'PUT' || inBacklog.has(`${entry.key}@${entry.revision}`)) return;
    const call = decodeCall(entry);
    if (call && wanted(call)) queue.push({ ...call, revision: entry.revision });
  });
  return queue;
}

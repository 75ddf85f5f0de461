import { Invalid, NotFound } from '../../kernel/errors.js';
import { ID_PATTERN } from '../../kernel/ids.js';
import { newestFirst, type PageRequest, pageOf } from '../../kernel/pages.js';
import { oneOf } from '../../kernel/values.js';
import type { Db } from '../../store/db.js';
import { aliasesOfSeats, resolveSeatName } from '../seats/seats.js';
import { CALL_STATES, CALLS_PAGE_MAX, type Call, type CallState, type CallSummary, type CallsMesh, readCall } from './records.js';

// Reading calls, whichever door asks: one by id, pages filtered by seat (any of its names), verb,
// state and caller, and the count of those running. Writing them is records.ts's.

/** The call with that id, across restarts of any replica; NotFound when the bucket has none (or no longer). */
export async function callById(mesh: CallsMesh, id: string): Promise<Call> {
  if (typeof id !== 'string' || !ID_PATTERN.test(id))
    throw new Invalid(`call id ${JSON.stringify(String(id).slice(0, 60))} is malformed: 19 letters and digits`, 'id');
  const found = await readCall(mesh, id);
  if (!found) throw new NotFound('call', id);
  return found.call;
}

interface CallFilter {
  /** A seat's name; with `seats`, any of those names (a seat and its aliases). */
  seat?: string | null;
  seats?: readonly string[];
  verb?: string | null;
  state?: CallState | null;
  caller?: string | null;
}

/**
 * The names a seat filter matches: the name asked, the seat it resolves to and that seat's aliases,
 * so calls recorded before a rename are found under the new name and the old.
 */
export async function seatNamesFor(db: Db, name: string): Promise<string[]> {
  const canonical = await resolveSeatName(db, name);
  if (!canonical) return [name];
  const [aliases] = await aliasesOfSeats(db, [canonical]);
  return [...new Set([name, canonical, ...(aliases ?? [])])];
}

/** The summaries of the calls kept, newest first, filtered; from this replica's view. */
function callSummaries(mesh: CallsMesh, filter: CallFilter = {}): CallSummary[] {
  return mesh.views.calls
    .values()
    .map((e) => e.value)
    .filter(
      (c) =>
        (filter.seats ? filter.seats.includes(c.seat) : !filter.seat || c.seat === filter.seat) &&
        (!filter.verb || c.verb === filter.verb) &&
        (!filter.state || c.state === filter.state) &&
        (!filter.caller || c.caller === filter.caller),
    )
    .sort(newestFirst);
}

/** What a reader of calls asks for: a seat by any of its names, a verb, a state (CallState's name), a caller. */
export interface CallQuery {
  seat?: string | null;
  verb?: string | null;
  state?: string | null;
  caller?: string | null;
}

/**
 * The `calls` reading, whichever door asks: a page of calls newest first, each read whole from the
 * bucket, older than `after` (a call id) when given; a seat matches its calls under any of its
 * names. Invalid for an unknown state, a negative first or a page over CALLS_PAGE_MAX.
 */
export async function listCalls(mesh: CallsMesh & { db: Db }, query: CallQuery, page: PageRequest): Promise<Call[]> {
  // A page asks for first + 1 to know whether another follows: below 1, first was negative.
  if (page.limit < 1) throw new Invalid('first must be 0 or more', 'first');
  if (page.limit > CALLS_PAGE_MAX + 1) throw new Invalid(`at most ${CALLS_PAGE_MAX} calls a page`, 'first');
  const state = oneOf(query.state, CALL_STATES, 'state');
  const seats = query.seat == null ? undefined : await seatNamesFor(mesh.db, query.seat);
  const wanted = pageOf(callSummaries(mesh, { seats, verb: query.verb, state, caller: query.caller }), page);
  const read = await Promise.all(wanted.map((c) => readCall(mesh, c.id)));
  return read.flatMap((r) => (r ? [r.call] : []));
}

/** How many calls are RUNNING, on any replica, as this replica's view has them. */
export const countRunningCalls = (mesh: CallsMesh): number => mesh.views.calls.values().filter((e) => e.value.state === 'RUNNING').length;

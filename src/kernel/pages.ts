import { Invalid } from './errors.js';
import { ID_PATTERN } from './ids.js';
import { isName } from './names.js';

/** A cursor page over a newest-first list: ids are cursors; `inverted` takes from the oldest end (relay `last`). */
export interface PageRequest {
  after?: string | null;
  before?: string | null;
  limit: number;
  inverted?: boolean;
}

/**
 * The page request of a list paged by id (calls, hand-acts), its cursors checked: Invalid naming
 * `after` or `before` when one is not an id, so a cursor is data, never matched as text.
 */
export function idPageOf(page: PageRequest, list: string): PageRequest {
  for (const field of ['after', 'before'] as const) {
    const cursor = page[field];
    if (cursor != null && !ID_PATTERN.test(cursor)) throw new Invalid(`${field} is not a cursor of ${list}: pass a cursor this list gave`, field);
  }
  return page;
}

/** Applies a page request to items sorted newest first by id. */
export function pageOf<T extends { id: string }>(items: T[], page: PageRequest): T[] {
  const { after, before } = page;
  const within = items.filter((c) => (!after || c.id < after) && (!before || c.id > before));
  return (page.inverted ? within.reverse() : within).slice(0, Math.max(0, page.limit));
}

/** Newest first by id: ids sort by creation time. */
export const newestFirst = (a: { id: string }, b: { id: string }): number => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/**
 * At most this many items a page of a list ordered by name (machines, seats, holdings): larger is
 * refused, not cut, so that a client is never handed fewer than it asked for without a word.
 */
export const NAME_PAGE_MAX = 1000;
/** Items a page when neither `first` nor `last` is given. */
export const NAME_PAGE_DEFAULT = 100;

/** A page over a list ordered by a key of names: `after` and `before` are keys read from cursors. */
export interface KeyPage {
  after?: readonly string[];
  before?: readonly string[];
  /** The items to read: the page and one more, to know whether another follows. */
  limit: number;
  /** Read from the end (relay `last`): the caller reverses what comes back. */
  inverted: boolean;
}

/**
 * An opaque cursor holding the item's sort key itself, never an offset: it names the same place
 * in the list on every replica and after restarts, and stays valid when items come and go.
 */
export function keyCursor(list: string, key: readonly string[]): string {
  return Buffer.from(JSON.stringify([list, ...key])).toString('base64url');
}

function readKeyCursor(list: string, parts: number, cursor: string, field: string): string[] {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    decoded = undefined;
  }
  if (
    !Array.isArray(decoded) ||
    decoded.length !== parts + 1 ||
    decoded[0] !== list ||
    // Every part of a key is a name: anything else (a NUL, a space, a number) is no place in the list.
    !decoded.slice(1).every(isName)
  ) {
    throw new Invalid(`${field} is not a cursor of ${list}: pass a cursor this list gave`, field);
  }
  return decoded.slice(1) as string[];
}

/**
 * Reads a page request over the list `list` (`parts` names a key): its cursors decoded, its size
 * checked. Invalid for a cursor of another list or not a cursor, or a page over NAME_PAGE_MAX.
 */
export function keyPageOf(list: string, parts: number, page: PageRequest, what: string): KeyPage {
  // The request's limit is the page and one more.
  if (page.limit > NAME_PAGE_MAX + 1) throw new Invalid(`at most ${NAME_PAGE_MAX} ${what} a page`, page.inverted ? 'last' : 'first');
  return {
    after: page.after ? readKeyCursor(list, parts, page.after, 'after') : undefined,
    before: page.before ? readKeyCursor(list, parts, page.before, 'before') : undefined,
    limit: Math.max(0, page.limit),
    inverted: page.inverted ?? false,
  };
}

/** A cursor page over a newest-first list: ids are cursors; `inverted` takes from the oldest end (relay `last`). */
export interface PageRequest {
  after?: string | null;
  before?: string | null;
  limit: number;
  inverted?: boolean;
}

/** Applies a page request to items sorted newest first by id. */
export function pageOf<T extends { id: string }>(items: T[], page: PageRequest): T[] {
  const { after, before } = page;
  const within = items.filter((c) => (!after || c.id < after) && (!before || c.id > before));
  return (page.inverted ? within.reverse() : within).slice(0, Math.max(0, page.limit));
}

/** Newest first by id: ids sort by creation time. */
export const newestFirst = (a: { id: string }, b: { id: string }): number => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

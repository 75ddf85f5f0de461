import { type DefaultConnectionArguments, type ResolveCursorConnectionArgs, resolveCursorConnection } from '@pothos/plugin-relay';
import { NAME_PAGE_DEFAULT } from '../../kernel/pages.js';

/**
 * A Relay page read by a service that refuses a page over its own maximum (an INVALID error naming
 * `first` or `last`, never a shorter page): Pothos is given no maxSize of its own, since its
 * `maxSize` would cut `first: 1000` to the maximum silently, before the service could refuse it.
 */
export function servicePage<T>(
  args: DefaultConnectionArguments,
  toCursor: (item: T) => string,
  defaultSize: number,
  read: (page: ResolveCursorConnectionArgs) => Promise<T[]> | T[],
) {
  return resolveCursorConnection<Promise<T[]>>({ args, toCursor, defaultSize, maxSize: Number.MAX_SAFE_INTEGER }, async (page) => read(page));
}

/**
 * A page of a list ordered by name (machines, seats, holdings): its items, for the loaders to be
 * primed with, and the connection with `totalCount`, counted only when a query selects it.
 */
export async function namePage<T>(
  args: DefaultConnectionArguments,
  toCursor: (item: T) => string,
  read: (page: ResolveCursorConnectionArgs) => Promise<T[]>,
  count: () => Promise<number>,
) {
  const connection = await servicePage(args, toCursor, NAME_PAGE_DEFAULT, read);
  const items = connection.edges.flatMap((edge) => (edge ? [edge.node] : []));
  return { items, connection: { ...connection, totalCount: count } };
}

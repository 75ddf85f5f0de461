import { Invalid } from './errors.js';

/** A name travels as one NATS subject token, so dots, spaces, `*` and `>` are out. */
export const NAME_MAX = 200;
const NAME = /^[A-Za-z0-9_-]+$/;

/** Whether a value is a name by the one rule: 1 to NAME_MAX letters, digits, '-' and '_'. */
export const isName = (value: unknown): value is string => typeof value === 'string' && value.length > 0 && value.length <= NAME_MAX && NAME.test(value);

/** What the rule says, for messages that refuse a name. */
export const NAME_RULE = `1 to ${NAME_MAX} letters, digits, '-' or '_'`;

/**
 * Names are ASCII letters, digits, '-' and '_': code-unit order is their order (and cheaper than a
 * collation). SQL orders them the same way through store/name-order.ts' `byNameSql` (collate "C").
 */
export const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * In `items` sorted by `nameOf` in name order (`byName`), the first index from `from` whose name
 * is not before `name`, or with `past` not before or at it: a binary search.
 */
export function nameIndex<T>(items: readonly T[], nameOf: (item: T) => string, name: string, from = 0, past = false): number {
  let lo = from;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const order = byName(nameOf(items[mid]!), name);
    if (order < 0 || (past && order === 0)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The first string after every name that starts with `prefix`, in code-unit order: the prefix with
 * its last character raised by one. Names are ASCII, so `[prefix, prefixEnd(prefix))` is exactly
 * the names that start with it, one range of an index in code-unit order (COLLATE "C").
 */
export const prefixEnd = (prefix: string): string => prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);

/**
 * The one rule for seat, machine, module, site, plan and build names, used by every door
 * (GraphQL, NATS verbs, news). Returns the name; throws Invalid saying what is wrong with it.
 */
export function checkName(value: unknown, what = 'name'): string {
  if (typeof value !== 'string') throw new Invalid(`${what} must be a string`, what);
  if (value.length === 0) throw new Invalid(`${what} is blank`, what);
  if (value.length > NAME_MAX) throw new Invalid(`${what} is ${value.length} characters; at most ${NAME_MAX}`, what);
  if (!NAME.test(value)) {
    const bad = [...value].find((ch) => !/[A-Za-z0-9_-]/.test(ch)) ?? '';
    throw new Invalid(`${what} ${JSON.stringify(value.slice(0, 60))} has ${describe(bad)}; names are letters, digits, '-' and '_'`, what);
  }
  return value;
}

function describe(ch: string): string {
  if (ch === '.') return 'a dot';
  if (ch === ' ') return 'a space';
  if (/\s/.test(ch)) return 'white space';
  return `the character ${JSON.stringify(ch)}`;
}

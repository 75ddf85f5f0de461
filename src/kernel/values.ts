import { Invalid } from './errors.js';

/** The value when it is one of `allowed`, undefined when absent; Invalid naming the choices otherwise. */
export function oneOf<T extends string>(value: unknown, allowed: readonly T[], field: string): T | undefined {
  if (value === undefined || value === null) return undefined;
  if (!allowed.includes(value as T)) throw new Invalid(`${field} must be one of ${allowed.join(', ')}`, field);
  return value as T;
}

/**
 * The instants an argument may name: years 0001 to 9999, four-digit ISO 8601 years, all of which
 * PostgreSQL's timestamptz holds (JavaScript reaches year -271821, PostgreSQL 4713 BC only).
 */
export const INSTANT_EARLIEST = new Date('0001-01-01T00:00:00.000Z');
export const INSTANT_LATEST = new Date('9999-12-31T23:59:59.999Z');

/** Why a Date cannot be taken as an instant, or undefined when it can. */
export function instantFault(date: Date): string | undefined {
  if (Number.isNaN(date.getTime())) return 'must be an ISO 8601 instant';
  if (date < INSTANT_EARLIEST || date > INSTANT_LATEST) return `must be between ${INSTANT_EARLIEST.toISOString()} and ${INSTANT_LATEST.toISOString()}`;
  return undefined;
}

/** An instant given as a Date or an ISO 8601 string; undefined when absent, Invalid when unreadable or out of range. */
export function instant(value: unknown, field: string): Date | undefined {
  if (value === undefined || value === null) return undefined;
  const date = value instanceof Date ? value : typeof value === 'string' ? new Date(value) : undefined;
  const fault = date ? instantFault(date) : 'must be an ISO 8601 instant';
  if (fault) throw new Invalid(`${field} ${fault}`, field);
  return date;
}

/**
 * Free text as given, when it is a string of at most `max` characters without a NUL (which
 * PostgreSQL's text cannot hold); undefined when absent. Invalid naming the field otherwise.
 */
export function freeText(value: unknown, field: string, max: number): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new Invalid(`${field} must be a string`, field);
  if (value.includes('\u0000')) throw new Invalid(`${field} holds a NUL character (U+0000), which no text may hold`, field);
  if (value.length > max) throw new Invalid(`${field} is ${value.length} characters; at most ${max}`, field);
  return value;
}

/**
 * How deeply a JSON argument may nest. Protocols and verb arguments nest a few levels; 100,000
 * levels overflowed `JSON.stringify` where a call is recorded.
 */
export const JSON_DEPTH_MAX = 32;

/** Whether a JSON value nests deeper than JSON_DEPTH_MAX (arrays and objects); iterative, stops at the bound. */
export function jsonTooDeep(value: unknown, max = JSON_DEPTH_MAX): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth + 1 > max) return true;
    for (const child of Array.isArray(item) ? item : Object.values(item)) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}

/** Whether a value holds a NUL character in any string or object key, nested up to JSON_DEPTH_MAX. */
export function holdsNul(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length) {
    const item = stack.pop();
    if (typeof item === 'string') {
      if (item.includes('\u0000')) return true;
    } else if (item !== null && typeof item === 'object') {
      if (Array.isArray(item)) for (const child of item) stack.push(child);
      else for (const [key, child] of Object.entries(item)) stack.push(key, child);
    }
  }
  return false;
}

/** The length of an instant as `Date.prototype.toISOString` writes it within years 0000–9999: `YYYY-MM-DDTHH:mm:ss.sssZ`. */
const ISO_INSTANT_LENGTH = 24;
/** Where the time of day starts in it, after `YYYY-MM-DDT`. */
const ISO_TIME_AT = 11;

const digitsAt = (iso: string, at: number, n: number): number => {
  let value = 0;
  for (let i = at; i < at + n; i++) value = value * 10 + iso.charCodeAt(i) - 48;
  return value;
};

const msOfDay = (iso: string): number => ((digitsAt(iso, 11, 2) * 60 + digitsAt(iso, 14, 2)) * 60 + digitsAt(iso, 17, 2)) * 1000 + digitsAt(iso, 20, 3);

/**
 * `later − earlier` in ms. Two instants of one day as `toISOString` writes them are read digit by
 * digit (a composition compares every machine's `lastHeardAt` with the one before: two
 * `Date.parse` each were 15% of the serving replica's CPU at 100,000 machines); any other pair
 * is parsed.
 */
export function msBetweenInstants(earlier: string, later: string): number {
  if (earlier.length === ISO_INSTANT_LENGTH && later.length === ISO_INSTANT_LENGTH && earlier.endsWith('Z') && later.endsWith('Z')) {
    let sameDay = true;
    for (let i = 0; i < ISO_TIME_AT && sameDay; i++) sameDay = earlier.charCodeAt(i) === later.charCodeAt(i);
    if (sameDay) return msOfDay(later) - msOfDay(earlier);
  }
  return Date.parse(later) - Date.parse(earlier);
}

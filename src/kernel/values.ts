import { Invalid } from './errors.js';

/** The value when it is one of `allowed`, undefined when absent; Invalid naming the choices otherwise. */
export function oneOf<T extends string>(value: unknown, allowed: readonly T[], field: string): T | undefined {
  if (value === undefined || value === null) return undefined;
  if (!allowed.includes(value as T)) throw new Invalid(`${field} must be one of ${allowed.join(', ')}`, field);
  return value as T;
}

/** An instant given as a Date or an ISO 8601 string; undefined when absent, Invalid when unreadable. */
export function instant(value: unknown, field: string): Date | undefined {
  if (value === undefined || value === null) return undefined;
  const date = value instanceof Date ? value : typeof value === 'string' ? new Date(value) : undefined;
  if (!date || Number.isNaN(date.getTime())) throw new Invalid(`${field} must be an ISO 8601 instant`, field);
  return date;
}

import { randomBytes } from 'node:crypto';

/** The shape of every id `newId` makes: 9 base-36 digits of milliseconds, then 10 hex digits. */
export const ID_PATTERN = /^[0-9a-z]{19}$/;

/**
 * An id that sorts by creation time (base-36 milliseconds, then randomness), so the newest id is
 * the greatest: calls, hand-acts and plans are paged by it.
 */
export function newId(now = Date.now()): string {
  return `${now.toString(36).padStart(9, '0')}${randomBytes(5).toString('hex')}`;
}

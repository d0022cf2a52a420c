import { InvalidRequestError } from './errors.js';

/**
 * A count an options object takes (how many keys a pass or a page takes, how many at once): a
 * whole number from 1 up, or absent for `fallback`. Anything else would reach PostgreSQL as a
 * `LIMIT` it refuses (a negative) or cannot take (a fraction, `Infinity`), or leave a loop with
 * nothing to do: refused here, before anything is read or written.
 *
 * @throws {InvalidRequestError} naming `field`.
 */
export function countOption(field: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1) return value;
  throw new InvalidRequestError([{ field, message: 'must be a whole number from 1 up' }]);
}

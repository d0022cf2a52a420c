import { IdempotencyKeyInUseError } from '../errors.js';

/**
 * The error of an attempt whose lease was taken over while it worked (it stalled past
 * `leaseMs`). Its writes were fenced off; the attempt that took over finishes the charge, so the
 * caller retries and gets that outcome.
 */
export function leaseLost(): IdempotencyKeyInUseError {
  return new IdempotencyKeyInUseError(250);
}

import {
  BackendTerminatedError,
  BackendTerminatedUnexpectedlyError,
  ConnectionError,
  StatementTimeoutError,
} from 'slonik';
import { ChargeOnceError, StoreUnavailableError } from '../errors.js';

// The one place where PostgreSQL and driver failures are classified.

/**
 * SQLSTATEs after which the transaction is known to have rolled back and can simply run again.
 * slonik retries these itself (`queryRetryLimit`, `transactionRetryLimit`).
 */
const RETRYABLE_SQLSTATES = new Set(['40001', '40P01']);

/**
 * SQLSTATE classes and codes that mean the database is out of reach for now: connection
 * exceptions, shutdowns, too many connections, statement timeout, a read-only server after a
 * failover (25006), a lock not available in time (55P03), and system errors (58).
 */
const UNAVAILABLE_SQLSTATE = /^(08|57P0[1-3]|53300|57014|25006|55P03|58)/;

/** Socket-level failures from the driver. */
const UNAVAILABLE_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
]);

function codeOf(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = error.code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}

function causeOf(error: unknown): unknown {
  return typeof error === 'object' && error !== null && 'cause' in error ? error.cause : undefined;
}

/** True for a serialization failure or a deadlock: the work rolled back and may run again. */
export function isRetryableStoreError(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e !== undefined && depth < 5; e = causeOf(e), depth++) {
    const code = codeOf(e);
    if (code !== undefined && RETRYABLE_SQLSTATES.has(code)) return true;
  }
  return false;
}

/** True when the database could not be reached or dropped the connection. */
export function isStoreUnavailable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e !== undefined && depth < 5; e = causeOf(e), depth++) {
    if (
      e instanceof ConnectionError ||
      e instanceof BackendTerminatedError ||
      e instanceof BackendTerminatedUnexpectedlyError ||
      e instanceof StatementTimeoutError
    ) {
      return true;
    }
    const code = codeOf(e);
    if (code !== undefined && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_ERRNO.has(code))) {
      return true;
    }
    if (e instanceof Error && /Connection terminated|pool (is )?(ended|closed)/i.test(e.message)) {
      return true;
    }
  }
  return false;
}

/**
 * Maps a failure from the store to the error chargeonce throws; its own errors pass through.
 * A serialization failure or deadlock that outlived slonik's own retries is transient too: the
 * work rolled back, and the caller may retry with the same key.
 */
export function toStoreError(error: unknown): unknown {
  if (error instanceof ChargeOnceError) return error;
  if (isStoreUnavailable(error) || isRetryableStoreError(error)) {
    return new StoreUnavailableError({ cause: error });
  }
  return error;
}

/** Runs one store operation, translating connection loss into `StoreUnavailableError`. */
export async function withStore<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw toStoreError(error);
  }
}

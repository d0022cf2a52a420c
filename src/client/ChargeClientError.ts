import { ChargeOnceError } from '../errors.js';
import { nameErrorKind } from '../errorKinds.js';

/** A response the client received, kept as it came. */
export type ChargeClientResponse = {
  status: number;
  headers: Headers;
  /** The body text, exactly as received. */
  body: string;
};

/** What the client was asked to do: `charge()`, `refund()` or `capture()`. */
export type ClientOperation = 'charge' | 'refund' | 'capture';

/**
 * Why the client gave up (the codes say `charge_` for refunds and captures too; `operation`
 * says which it was):
 * - `charge_refused`: an answer that retrying cannot change (400, 401, 403, 404, 410, 422, 500,
 *   501, a `reserve` hook's rejection, a refund or capture chargeonce refused (422 with
 *   `refusal`), a cancelled operation, an expired key, a refused provider answer, or any
 *   replayed outcome other than 2xx/402).
 * - `charge_retries_exhausted`: every failure was retryable, but `retries` or `maxElapsedMs` ran
 *   out (or a `Retry-After` pointed past `maxElapsedMs`, or asked for more than
 *   `MAX_RETRY_DELAY_MS`).
 * - `charge_aborted`: the caller's signal aborted.
 */
export type ChargeClientErrorCode =
  'charge_refused' | 'charge_retries_exhausted' | 'charge_aborted';

/**
 * The client gave up on an operation. It carries the operation's `key`: calling `charge` again
 * later with `{ key }` resumes the same operation, so it is never charged twice.
 */
export class ChargeClientError extends ChargeOnceError {
  declare readonly code: ChargeClientErrorCode;
  /** The idempotency key every attempt of this operation sent. */
  readonly key: string;
  /** Attempts made, the first included. */
  readonly attempts: number;
  /** The last response received, if any came (the last attempt may have failed on the network). */
  readonly response: ChargeClientResponse | undefined;
  /** Which call gave up. */
  readonly operation: ClientOperation;

  /**
   * `httpStatus` is the last response's status, or 502 when none came.
   * `cause` is the last attempt's network error or timeout, or the signal's reason.
   */
  constructor(
    code: ChargeClientErrorCode,
    details: {
      key: string;
      attempts: number;
      response: ChargeClientResponse | undefined;
      cause?: unknown;
      /** @defaultValue `'charge'` */
      operation?: ClientOperation;
    },
  ) {
    const operation = details.operation ?? 'charge';
    super(code, details.response?.status ?? 502, describe(code, operation, details), {
      cause: details.cause,
    });
    this.key = details.key;
    this.attempts = details.attempts;
    this.response = details.response;
    this.operation = operation;
  }
}

function describe(
  code: ChargeClientErrorCode,
  operation: ClientOperation,
  details: { attempts: number; response: ChargeClientResponse | undefined },
): string {
  const last = details.response ? `last status ${details.response.status}` : 'no response';
  const tries = `${details.attempts} attempt${details.attempts === 1 ? '' : 's'}`;
  switch (code) {
    case 'charge_refused':
      return `The ${operation} was refused with status ${details.response?.status ?? 'unknown'}.`;
    case 'charge_retries_exhausted':
      return `The ${operation} did not get an answer that can be kept after ${tries} (${last}).`;
    case 'charge_aborted':
      return `The ${operation} was aborted after ${tries} (${last}).`;
  }
}

nameErrorKind(ChargeClientError, 'ChargeClientError');

import { ProviderTransientError } from '../provider/PaymentProvider.js';
import { isErrorOfKind, nameErrorKind, recordErrorKinds } from '../errorKinds.js';

/**
 * What the adapter reads from an error the Stripe SDK threw. Read by shape, not `instanceof`:
 * the adapter never loads the `stripe` package itself, and the caller's copy may not be the one
 * this package would resolve.
 */
export type StripeErrorLike = Error & {
  /** The SDK's class name: `StripeCardError`, `StripeConnectionError`, … */
  type: string;
  statusCode?: number;
  code?: string;
  decline_code?: string;
  charge?: string;
  headers?: Record<string, string | undefined>;
  requestId?: string;
};

/** Why {@link StripeAdapterError} was thrown. */
export type StripeAdapterErrorKind =
  | 'idempotency_mismatch'
  | 'authentication'
  | 'permission'
  | 'invalid_request'
  | 'unexpected_answer'
  | 'lookup_incomplete'
  | 'search_unavailable';

/**
 * A Stripe failure that will not go away on a retry: a bug in the caller, a misconfigured key
 * or account, or an answer the adapter cannot use. Deliberately not a `ProviderTransientError`,
 * so chargeonce reports it as a `ProviderError` (502) and the key waits, in `reserved`, for a
 * person; the original SDK error is the `cause`.
 */
export class StripeAdapterError extends Error {
  /** True for one of this class from either build of chargeonce (see `errorKinds`). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isErrorOfKind(this, value);
  }

  readonly kind: StripeAdapterErrorKind;

  constructor(kind: StripeAdapterErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, { cause: options?.cause });
    this.name = 'StripeAdapterError';
    this.kind = kind;
    recordErrorKinds(this, new.target);
  }
}

nameErrorKind(StripeAdapterError, 'StripeAdapterError');

/** Whether `error` came from the Stripe SDK (any of its `Stripe…Error` classes). */
export function isStripeError(error: unknown): error is StripeErrorLike {
  if (!(error instanceof Error)) return false;
  const type: unknown = (error as Error & { type?: unknown }).type;
  return typeof type === 'string' && type.startsWith('Stripe');
}

/**
 * Maps a failed SDK call (a decline excepted: the caller handles `StripeCardError` first).
 *
 * - connection errors (refused, reset, the SDK's own timeout), 5xx, 429 (and 400
 *   `rate_limit`), 409 (`idempotency_key_in_use`: an earlier request under the key is still
 *   running) and any answer that carries `Stripe-Should-Retry: true` → `ProviderTransientError`,
 *   with `retryAfterMs` from `Retry-After` when Stripe sent one;
 * - the idempotency key reused with other parameters (400 `idempotency_error`), a refused API
 *   key (401) or permission (403), any other 4xx → {@link StripeAdapterError};
 * - anything that is not a Stripe error → unchanged.
 */
export function mapStripeError(error: unknown, providerKey: string): unknown {
  if (!isStripeError(error)) return error;
  const status = error.statusCode;
  const headers = error.headers ?? {};
  const retryAfterMs = parseRetryAfter(header(headers, 'retry-after'));
  const transient = (reason: string) =>
    new ProviderTransientError(reason, {
      cause: error,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    });

  if (error.type === 'StripeConnectionError') {
    return transient(/timeout|timed out/i.test(error.message) ? 'timeout' : 'connection');
  }
  if (error.type === 'StripeRateLimitError' || status === 429) return transient('http_429');
  if (status === 409) {
    return transient(
      error.code === 'idempotency_key_in_use' ? 'idempotency_key_in_use' : 'http_409',
    );
  }
  if (status === undefined || status >= 500) {
    // `StripeAPIError` with no status: the SDK could not read an answer at all.
    return transient(status === undefined ? 'no_answer' : `http_${status}`);
  }
  if (header(headers, 'stripe-should-retry') === 'true') return transient(`http_${status}`);

  const requestId = error.requestId ? ` (request ${error.requestId})` : '';
  if (error.type === 'StripeIdempotencyError') {
    return new StripeAdapterError(
      'idempotency_mismatch',
      `Stripe refused the idempotency key ${JSON.stringify(providerKey)}: it was first used with other parameters${requestId}. ` +
        'This is a bug in the caller, not a payment failure: chargeonce sends the same parameters on every retry of one key, ' +
        'so something else sent a request under this key, or the parameters sent to Stripe changed between retries ' +
        '(a paymentSource mapping that is not a pure function of the charge input?). Nothing was charged by this request. ' +
        `Stripe said: ${error.message}`,
      { cause: error },
    );
  }
  if (error.type === 'StripeAuthenticationError' || status === 401) {
    return new StripeAdapterError(
      'authentication',
      `Stripe refused the API key${requestId}: ${error.message}`,
      { cause: error },
    );
  }
  if (error.type === 'StripePermissionError' || status === 403) {
    return new StripeAdapterError(
      'permission',
      `The API key may not do this on this Stripe account${requestId}: ${error.message}`,
      { cause: error },
    );
  }
  return new StripeAdapterError(
    'invalid_request',
    `Stripe refused the request (${status}${error.code ? ` ${error.code}` : ''})${requestId}: ${error.message}`,
    { cause: error },
  );
}

function header(headers: Record<string, string | undefined>, name: string): string | undefined {
  const value = headers[name] ?? headers[name.toLowerCase()];
  if (value !== undefined) return value;
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
  return key === undefined ? undefined : headers[key];
}

/** `Retry-After` is either seconds or an HTTP date. */
export function parseRetryAfter(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (value.trim() !== '' && Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

import pRetry, { AbortError, type RetryContext } from 'p-retry';
import { InvalidRequestError } from '../errors.js';
import { idempotencyKeyHeaderValue, isValidIdempotencyKey } from '../idempotencyKey.js';
import {
  ChargeClientError,
  type ChargeClientErrorCode,
  type ChargeClientResponse,
  type ClientOperation,
} from './ChargeClientError.js';
import {
  backoffDelay,
  isChargeOutcome,
  isRetryableResponse,
  nextDelay,
  parseRetryAfter,
} from './retryPolicy.js';
import { checkNumberOption, type ResolvedClientOptions } from './resolveClientOptions.js';
import { sendAttempt } from './sendAttempt.js';

/** Per-operation options of `charge`, `refund` and `capture`. */
export type ChargeOptions = {
  /**
   * The operation's idempotency key, sent on every attempt. Pass the `key` of a
   * `ChargeClientError` to resume an operation the client gave up on.
   * @defaultValue a random UUID v4
   */
  key?: string;
  /** Stops retrying; an attempt in flight is cancelled. */
  signal?: AbortSignal;
  /** A non-negative integer. @defaultValue the client's `retries` */
  retries?: number;
  /** A finite number ≥ 0. @defaultValue the client's `maxElapsedMs` */
  maxElapsedMs?: number;
};

/** The answer an operation ended with: done (2xx) or refused by the provider (402). */
export type ChargeResult = {
  /** The idempotency key the operation used. */
  key: string;
  status: number;
  /** The body text, exactly as the server stored it. */
  body: string;
  /** True when the server replayed a stored outcome (`Idempotent-Replayed: true`). */
  replayed: boolean;
  headers: Headers;
  /** Attempts made, the first included. */
  attempts: number;
};

/** One operation to run: what it is, where it goes, and what it sends. */
export type OperationCall = {
  operation: ClientOperation;
  url: URL;
  request: unknown;
  options: ChargeOptions;
};

/** An attempt failed in a way that may not happen next time. */
class RetryableFailure extends Error {
  constructor(
    readonly response: ChargeClientResponse | undefined,
    options?: { cause?: unknown },
  ) {
    super(response ? `status ${response.status}` : 'no response', options);
    this.name = 'RetryableFailure';
  }
}

/**
 * Runs one operation to its answer: one key for all its attempts, the same bytes on each,
 * retried while a failure may differ next time (see `ChargeClient.charge`).
 *
 * @throws {InvalidRequestError} the key is not 1–255 printable ASCII; nothing was sent.
 * @throws {InvalidConfigurationError} `retries` or `maxElapsedMs` is out of range.
 * @throws {ChargeClientError} refused, out of retries, or aborted.
 */
export async function runOperation(
  config: ResolvedClientOptions,
  call: OperationCall,
): Promise<ChargeResult> {
  const { operation, options: callOptions } = call;
  const key = callOptions.key ?? globalThis.crypto.randomUUID();
  if (!isValidIdempotencyKey(key)) {
    throw new InvalidRequestError([
      { field: 'key', message: 'must be 1-255 printable ASCII characters' },
    ]);
  }
  const { signal } = callOptions;
  const retries = checkNumberOption('retries', callOptions.retries ?? config.retries);
  const maxElapsedMs = checkNumberOption(
    'maxElapsedMs',
    callOptions.maxElapsedMs ?? config.maxElapsedMs,
  );
  // Serialized once: every attempt sends the same bytes, so the server sees one request.
  const body = JSON.stringify(call.request);
  const startedAt = config.now();
  let attempts = 0;
  let lastResponse: ChargeClientResponse | undefined;
  const fail = (code: ChargeClientErrorCode, cause?: unknown) =>
    new ChargeClientError(code, { key, attempts, response: lastResponse, cause, operation });

  const attempt = async (attemptNumber: number): Promise<ChargeResult> => {
    attempts = attemptNumber;
    const headers = await buildHeaders(config, key);
    const result = await sendAttempt({
      fetch: config.fetch,
      url: call.url,
      headers,
      body,
      timeoutMs: config.attemptTimeoutMs,
      signal,
    });
    switch (result.kind) {
      case 'aborted':
        throw new AbortError(fail('charge_aborted', result.cause));
      case 'timeout':
        throw new RetryableFailure(undefined, { cause: result.cause });
      case 'network':
        // Whatever fetch threw, no answer came: the request may or may not have reached the
        // server, and the next attempt may get through. Every runtime and custom fetch names its
        // network errors its own way (a `TypeError` of any message, mostly), and what fetch
        // would refuse for good (credentials in the URL, a bad header) is refused before the
        // first attempt, so none is told apart here: each is retried, and when retries run out
        // the caller gets the key with it as the cause.
        throw new RetryableFailure(undefined, { cause: result.cause });
      case 'response':
        break;
    }
    const response = (lastResponse = result.response);
    const replayed = response.headers.get('idempotent-replayed') === 'true';
    if (isChargeOutcome(response.status)) {
      return {
        key,
        status: response.status,
        body: response.body,
        replayed,
        headers: response.headers,
        attempts,
      };
    }
    // A replay is a stored outcome: it will be the same next time, whatever its status.
    if (replayed || !isRetryableResponse(response)) {
      throw new AbortError(fail('charge_refused'));
    }
    throw new RetryableFailure(response);
  };

  // The last failure that may differ next time: when p-retry rethrows it, retries ran out.
  let retryable: unknown;
  // p-retry runs the loop and stops on AbortError or the signal. Its own delays are off (`minTimeout:
  // 0`): it offers no full jitter and cannot read `Retry-After`, so the wait happens in
  // `shouldRetry`, on the injectable clock. Its retry count is unbounded (`Infinity`) so
  // that every failure it would retry is seen here, where `retries` is counted.
  const waitBeforeRetry = async ({ error, retriesConsumed }: RetryContext) => {
    if (!(error instanceof RetryableFailure)) return false;
    retryable = error;
    if (retriesConsumed >= retries) return false;
    const { response } = error;
    const delay = nextDelay({
      backoffMs: backoffDelay(retriesConsumed, config),
      retryAfterMs: response
        ? parseRetryAfter(response.headers.get('retry-after'), config.now())
        : undefined,
      elapsedMs: config.now() - startedAt,
      maxElapsedMs,
    });
    if (delay === undefined) return false;
    await config.sleep(delay, signal);
    return true;
  };

  try {
    return await pRetry(attempt, {
      retries: Number.POSITIVE_INFINITY,
      minTimeout: 0,
      randomize: false,
      signal,
      shouldRetry: waitBeforeRetry,
    });
  } catch (error) {
    if (error instanceof ChargeClientError) throw error;
    if (signal?.aborted) throw fail('charge_aborted', signal.reason);
    if (error instanceof RetryableFailure && error === retryable) {
      throw fail('charge_retries_exhausted', error.cause);
    }
    throw error;
  }
}

async function buildHeaders(config: ResolvedClientOptions, key: string): Promise<Headers> {
  try {
    const extra = typeof config.headers === 'function' ? await config.headers() : config.headers;
    const headers = new Headers(extra);
    headers.set('Content-Type', 'application/json');
    headers.set(config.keyHeader, idempotencyKeyHeaderValue(key));
    return headers;
  } catch (error) {
    // A caller's header bug is the same on every attempt: no retry.
    throw new AbortError(error instanceof Error ? error : new Error(String(error)));
  }
}

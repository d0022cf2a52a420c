import pRetry, { AbortError, type RetryContext } from 'p-retry';
import { InvalidConfigurationError, InvalidRequestError } from '../errors.js';
import type { ChargeRequestBody } from '../http/parseChargeBody.js';
import {
  ChargeClientError,
  type ChargeClientErrorCode,
  type ChargeClientResponse,
} from './ChargeClientError.js';
import {
  backoffDelay,
  isChargeOutcome,
  isRetryableStatus,
  parseRetryAfter,
} from './retryPolicy.js';
import { sendAttempt } from './sendAttempt.js';
import { sleep as timerSleep } from './sleep.js';

/** Options of {@link createChargeClient}. */
export type ChargeClientOptions = {
  /** Where the charge handler is mounted; charges are POSTed to `${baseUrl}${path}`. */
  baseUrl: string | URL;
  /**
   * The charge route under `baseUrl`.
   * @defaultValue `'/charges'`
   */
  path?: string;
  /**
   * The fetch to send with (an instrumented one, or a test double).
   * @defaultValue `globalThis.fetch`
   */
  fetch?: typeof globalThis.fetch;
  /**
   * Headers sent with every attempt, such as `Authorization`. A function is called before each
   * attempt, so a token can be refreshed between retries; if it throws, `charge` rejects with
   * that error at once.
   * @defaultValue none
   */
  headers?:
    Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>);
  /**
   * The header that carries the idempotency key.
   * @defaultValue `'Idempotency-Key'`
   */
  keyHeader?: string;
  /**
   * Retries after the first attempt, for each `charge` unless it says otherwise.
   * @defaultValue `10`
   */
  retries?: number;
  /**
   * No retry starts once this much time has passed since `charge` was called, nor one that a
   * `Retry-After` would push past it. An attempt in flight is bounded by `attemptTimeoutMs`.
   * @defaultValue `60_000`
   */
  maxElapsedMs?: number;
  /**
   * How long one attempt may take, body included, before it counts as a (retryable) timeout.
   * Keep it above the server's worst case (its provider timeout, plus any in-progress wait).
   * @defaultValue `30_000`
   */
  attemptTimeoutMs?: number;
  /**
   * The backoff cap of the first retry; it doubles with each retry up to `maxDelayMs`.
   * @defaultValue `250`
   */
  baseDelayMs?: number;
  /**
   * The largest backoff cap. A `Retry-After` may ask for longer and is honoured.
   * @defaultValue `10_000`
   */
  maxDelayMs?: number;
  /**
   * A draw in `[0, 1)` for the jitter (tests make it deterministic).
   * @defaultValue `Math.random`
   */
  random?: () => number;
  /**
   * The wall clock in milliseconds since the epoch: measures `maxElapsedMs` and reads
   * `Retry-After` dates.
   * @defaultValue `Date.now`
   */
  now?: () => number;
  /**
   * Waits between attempts; must reject with the signal's reason when it aborts. Tests inject
   * one that does not wait.
   * @defaultValue a `setTimeout` that the signal cancels
   */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
};

/** Per-operation options of {@link ChargeClient.charge}. */
export type ChargeOptions = {
  /**
   * The operation's idempotency key, sent on every attempt. Pass the `key` of a
   * `ChargeClientError` to resume an operation the client gave up on.
   * @defaultValue a random UUID v4
   */
  key?: string;
  /** Stops retrying; an attempt in flight is cancelled. */
  signal?: AbortSignal;
  /** @defaultValue the client's `retries` */
  retries?: number;
  /** @defaultValue the client's `maxElapsedMs` */
  maxElapsedMs?: number;
};

/** The answer an operation ended with: charged (2xx) or declined (402). */
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

/** A client of the charge handler that retries safely. */
export type ChargeClient = {
  /**
   * Runs one charge operation: one key for all its attempts, so retries never charge twice.
   * Retries network errors, timeouts, 408, 409, 429, 502, 503 and 504, with exponential
   * backoff and full jitter, waiting at least what `Retry-After` asks; never anything else.
   * Resolves with a 2xx or a 402 (a decline is an answer, not a failure).
   *
   * @throws {InvalidRequestError} the key is not 1–255 printable ASCII; nothing was sent.
   * @throws {ChargeClientError} refused, out of retries, or aborted; it carries the key and the
   * last response, so the same operation can be resumed later.
   */
  charge(request: ChargeRequestBody, options?: ChargeOptions): Promise<ChargeResult>;
};

const DEFAULTS = {
  path: '/charges',
  keyHeader: 'Idempotency-Key',
  retries: 10,
  maxElapsedMs: 60_000,
  attemptTimeoutMs: 30_000,
  baseDelayMs: 250,
  maxDelayMs: 10_000,
} as const;

/** The engine's rule for keys, checked here so a bad key fails before it is sent. */
const VALID_KEY = /^[\x20-\x7E]{1,255}$/;

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
 * Creates a retrying client for the charge handler.
 *
 * @throws {InvalidConfigurationError} for a `baseUrl` that is not a URL or a negative option.
 */
export function createChargeClient(options: ChargeClientOptions): ChargeClient {
  const config = resolveOptions(options);

  return {
    async charge(request, callOptions = {}) {
      const key = callOptions.key ?? globalThis.crypto.randomUUID();
      if (!VALID_KEY.test(key)) {
        throw new InvalidRequestError([
          { field: 'key', message: 'must be 1-255 printable ASCII characters' },
        ]);
      }
      const { signal } = callOptions;
      const maxElapsedMs = callOptions.maxElapsedMs ?? config.maxElapsedMs;
      // Serialized once: every attempt sends the same bytes, so the server sees one request.
      const body = JSON.stringify(request);
      const startedAt = config.now();
      let attempts = 0;
      let lastResponse: ChargeClientResponse | undefined;
      const fail = (code: ChargeClientErrorCode, cause?: unknown) =>
        new ChargeClientError(code, { key, attempts, response: lastResponse, cause });

      const attempt = async (attemptNumber: number): Promise<ChargeResult> => {
        attempts = attemptNumber;
        const headers = await buildHeaders(config, key);
        const result = await sendAttempt({
          fetch: config.fetch,
          url: config.url,
          headers,
          body,
          timeoutMs: config.attemptTimeoutMs,
          signal,
        });
        switch (result.kind) {
          case 'aborted':
            throw new AbortError(fail('charge_aborted', result.cause));
          case 'timeout':
          case 'network':
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
        if (replayed || !isRetryableStatus(response.status)) {
          throw new AbortError(fail('charge_refused'));
        }
        throw new RetryableFailure(response);
      };

      // p-retry runs the loop, counts retries and stops on AbortError or the signal. Its own
      // delays are off (`minTimeout: 0`): it offers no full jitter and cannot read
      // `Retry-After`, so the wait happens in `shouldRetry`, on the injectable clock.
      const waitBeforeRetry = async ({ error, retriesConsumed }: RetryContext) => {
        if (!(error instanceof RetryableFailure)) return false;
        const asked = error.response
          ? parseRetryAfter(error.response.headers.get('retry-after'), config.now())
          : undefined;
        const delay = Math.max(backoffDelay(retriesConsumed, config), asked ?? 0);
        // Coming back after the deadline would be a retry nobody waits for: give up now.
        if (config.now() - startedAt + delay > maxElapsedMs) return false;
        await config.sleep(delay, signal);
        return true;
      };

      try {
        return await pRetry(attempt, {
          retries: callOptions.retries ?? config.retries,
          minTimeout: 0,
          randomize: false,
          signal,
          shouldRetry: waitBeforeRetry,
        });
      } catch (error) {
        if (error instanceof ChargeClientError) throw error;
        if (signal?.aborted) throw fail('charge_aborted', signal.reason);
        if (error instanceof RetryableFailure) throw fail('charge_retries_exhausted', error.cause);
        throw error;
      }
    },
  };
}

async function buildHeaders(
  config: ReturnType<typeof resolveOptions>,
  key: string,
): Promise<Headers> {
  try {
    const extra = typeof config.headers === 'function' ? await config.headers() : config.headers;
    const headers = new Headers(extra);
    headers.set('Content-Type', 'application/json');
    headers.set(config.keyHeader, key);
    return headers;
  } catch (error) {
    // A caller's header bug is the same on every attempt: no retry.
    throw new AbortError(error instanceof Error ? error : new Error(String(error)));
  }
}

function resolveOptions(options: ChargeClientOptions) {
  let url: URL;
  try {
    url = new URL(options.baseUrl);
  } catch (error) {
    throw new InvalidConfigurationError(`baseUrl must be an absolute URL: ${String(error)}`);
  }
  // Appended, not resolved: `new URL('/charges', 'https://api/v1/')` would drop `/v1`.
  url.pathname = url.pathname.replace(/\/+$/, '') + (options.path ?? DEFAULTS.path);
  const numbers = {
    retries: options.retries ?? DEFAULTS.retries,
    maxElapsedMs: options.maxElapsedMs ?? DEFAULTS.maxElapsedMs,
    attemptTimeoutMs: options.attemptTimeoutMs ?? DEFAULTS.attemptTimeoutMs,
    baseDelayMs: options.baseDelayMs ?? DEFAULTS.baseDelayMs,
    maxDelayMs: options.maxDelayMs ?? DEFAULTS.maxDelayMs,
  };
  for (const [name, value] of Object.entries(numbers)) {
    if (!(typeof value === 'number' && value >= 0 && !Number.isNaN(value))) {
      throw new InvalidConfigurationError(`${name} must be a non-negative number`);
    }
  }
  return {
    ...numbers,
    url,
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    headers: options.headers ?? {},
    keyHeader: options.keyHeader ?? DEFAULTS.keyHeader,
    random: options.random ?? Math.random,
    now: options.now ?? Date.now,
    sleep: options.sleep ?? timerSleep,
  };
}

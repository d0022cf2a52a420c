import { InvalidConfigurationError } from '../errors.js';
import { MAX_RETRY_DELAY_MS } from './retryPolicy.js';
import { sleep } from './sleep.js';

/** Options of `createChargeClient`. */
export type ChargeClientOptions = {
  /**
   * Where the charge handler is mounted; charges are POSTed to `${baseUrl}${path}`. An absolute
   * `http:` or `https:` URL without credentials: send those in `headers`.
   */
  baseUrl: string | URL;
  /**
   * The charge route under `baseUrl`; refunds go to `{path}/{chargeId}/refunds` and captures
   * to `{path}/{chargeId}/capture` (the server serves those below a path ending in `/charges`).
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
   * Retries after the first attempt, for each `charge` unless it says otherwise. A non-negative
   * integer.
   * @defaultValue `10`
   */
  retries?: number;
  /**
   * No retry starts once this much time has passed since `charge` was called, nor one that a
   * `Retry-After` would push past it. An attempt in flight is bounded by `attemptTimeoutMs`.
   * Finite: `retries` and this bound every operation.
   * @defaultValue `60_000`
   */
  maxElapsedMs?: number;
  /**
   * How long one attempt may take, body included, before it counts as a (retryable) timeout.
   * Keep it above the server's worst case (its provider timeout, plus any in-progress wait).
   * Positive, and at most 2_147_483_647 (a timer's longest delay).
   * @defaultValue `30_000`
   */
  attemptTimeoutMs?: number;
  /**
   * The backoff cap of the first retry; it doubles with each retry up to `maxDelayMs`.
   * @defaultValue `250`
   */
  baseDelayMs?: number;
  /**
   * The largest backoff cap; at most `MAX_RETRY_DELAY_MS` (60 s). A `Retry-After` may ask for
   * longer, up to 60 s, and is honoured; one that asks for more ends the operation.
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

const DEFAULTS = {
  path: '/charges',
  keyHeader: 'Idempotency-Key',
  retries: 10,
  maxElapsedMs: 60_000,
  attemptTimeoutMs: 30_000,
  baseDelayMs: 250,
  maxDelayMs: 10_000,
} as const;

/** setTimeout's longest delay: a longer one overflows and fires at once (Node clamps it to 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** What a numeric option must be. Every one is finite: none may turn a retry loop into a spin. */
const NUMBER_RULES = {
  retries: { min: 0, max: Number.MAX_SAFE_INTEGER, integer: true, says: 'a non-negative integer' },
  maxElapsedMs: { min: 0, max: Number.MAX_VALUE, integer: false, says: 'a finite number ≥ 0' },
  attemptTimeoutMs: {
    min: Number.MIN_VALUE,
    max: MAX_TIMER_MS,
    integer: false,
    says: `a number > 0 and ≤ ${MAX_TIMER_MS}`,
  },
  baseDelayMs: { min: 0, max: Number.MAX_VALUE, integer: false, says: 'a finite number ≥ 0' },
  maxDelayMs: {
    min: 0,
    max: MAX_RETRY_DELAY_MS,
    integer: false,
    says: `a number ≥ 0 and ≤ ${MAX_RETRY_DELAY_MS} (MAX_RETRY_DELAY_MS)`,
  },
} as const;

/**
 * Checks one numeric option (of the client, or of one `charge`).
 *
 * @throws {InvalidConfigurationError} when it is not a finite number in its range.
 */
export function checkNumberOption(name: keyof typeof NUMBER_RULES, value: unknown): number {
  const rule = NUMBER_RULES[name];
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value < rule.min ||
    value > rule.max ||
    (rule.integer && !Number.isInteger(value))
  ) {
    throw new InvalidConfigurationError(`${name} must be ${rule.says}; got ${String(value)}`);
  }
  return value;
}

/** The options with their defaults filled in. */
export type ResolvedClientOptions = ReturnType<typeof resolveClientOptions>;

/**
 * Fills in the defaults and checks the options.
 *
 * @throws {InvalidConfigurationError} for a `baseUrl` that is not an absolute http(s) URL or that
 * carries credentials, a numeric option out of its range (or not finite), or a header name or
 * value that fetch would refuse.
 */
export function resolveClientOptions(options: ChargeClientOptions) {
  // Called from JavaScript without options: said as configuration, not a TypeError.
  if (typeof options !== 'object' || options === null) {
    throw new InvalidConfigurationError('createChargeClient needs options, with baseUrl');
  }
  const url = chargeUrl(options.baseUrl, options.path ?? DEFAULTS.path);
  const numbers = {
    retries: checkNumberOption('retries', options.retries ?? DEFAULTS.retries),
    maxElapsedMs: checkNumberOption('maxElapsedMs', options.maxElapsedMs ?? DEFAULTS.maxElapsedMs),
    attemptTimeoutMs: checkNumberOption(
      'attemptTimeoutMs',
      options.attemptTimeoutMs ?? DEFAULTS.attemptTimeoutMs,
    ),
    baseDelayMs: checkNumberOption('baseDelayMs', options.baseDelayMs ?? DEFAULTS.baseDelayMs),
    maxDelayMs: checkNumberOption('maxDelayMs', options.maxDelayMs ?? DEFAULTS.maxDelayMs),
  };
  const keyHeader = options.keyHeader ?? DEFAULTS.keyHeader;
  // Checked now, once: fetch would refuse them on every attempt, and a refusal cannot change.
  // The values are never quoted back: a header may carry a token.
  if (!isHeaderName(keyHeader)) {
    throw new InvalidConfigurationError('keyHeader must be a valid HTTP header name');
  }
  const headers = options.headers ?? {};
  if (typeof headers !== 'function' && !areValidHeaders(headers)) {
    throw new InvalidConfigurationError('headers must be valid HTTP header names and values');
  }
  return {
    ...numbers,
    url,
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    headers,
    keyHeader,
    random: options.random ?? Math.random,
    now: options.now ?? Date.now,
    sleep: options.sleep ?? sleep,
  };
}

/**
 * `${baseUrl}${path}`. Credentials in the URL are refused, not sent: fetch refuses them on every
 * attempt, and errors and logs would quote them. Neither the URL nor the parser's error (whose
 * `input` is the URL) goes into the message.
 */
function chargeUrl(baseUrl: string | URL, path: string): URL {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new InvalidConfigurationError('baseUrl must be an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new InvalidConfigurationError(
      `baseUrl must be an http(s) URL, not ${url.protocol.slice(0, 20)}`,
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw new InvalidConfigurationError(
      'baseUrl must not contain credentials (user:password@): send them in `headers`, such as an Authorization header',
    );
  }
  // Appended, not resolved: `new URL('/charges', 'https://api/v1/')` would drop `/v1`.
  url.pathname = url.pathname.replace(/\/+$/, '') + path;
  return url;
}

function isHeaderName(name: string): boolean {
  try {
    new Headers().set(name, 'x');
    return true;
  } catch {
    return false;
  }
}

function areValidHeaders(headers: Record<string, string>): boolean {
  try {
    new Headers(headers);
    return true;
  } catch {
    return false;
  }
}

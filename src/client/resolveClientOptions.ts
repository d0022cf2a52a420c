import { InvalidConfigurationError } from '../errors.js';
import { sleep } from './sleep.js';

/** Options of `createChargeClient`. */
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

const DEFAULTS = {
  path: '/charges',
  keyHeader: 'Idempotency-Key',
  retries: 10,
  maxElapsedMs: 60_000,
  attemptTimeoutMs: 30_000,
  baseDelayMs: 250,
  maxDelayMs: 10_000,
} as const;

/** The options with their defaults filled in. */
export type ResolvedClientOptions = ReturnType<typeof resolveClientOptions>;

/**
 * Fills in the defaults and checks the options.
 *
 * @throws {InvalidConfigurationError} for a `baseUrl` that is not a URL or a negative number.
 */
export function resolveClientOptions(options: ChargeClientOptions) {
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
  if (numbers.attemptTimeoutMs === 0) {
    throw new InvalidConfigurationError('attemptTimeoutMs must be positive');
  }
  return {
    ...numbers,
    url,
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    headers: options.headers ?? {},
    keyHeader: options.keyHeader ?? DEFAULTS.keyHeader,
    random: options.random ?? Math.random,
    now: options.now ?? Date.now,
    sleep: options.sleep ?? sleep,
  };
}
